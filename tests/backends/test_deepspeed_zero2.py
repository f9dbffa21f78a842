"""The deepspeed-zero2 backend on CPU: real DeepSpeed ZeRO-2 + CPUAdam under TRL, 1 and 2 processes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import pytest
import torch

pytest.importorskip("deepspeed", reason="the deepspeed backend tests need rlvr-gym[deepspeed]")

from rlvr_gym import envs
from rlvr_gym.backends import deepspeed_zero2
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.engine.launch import LaunchSpec
from rlvr_gym.backends.metrics import read_metrics
from rlvr_gym.trainers.tiny_model import build_tiny_model
from rlvr_gym.trainers.train import train

ok, why = deepspeed_zero2.available()
pytestmark = pytest.mark.skipif(not ok, reason=why)


@pytest.fixture
def tiny_arith(warm_arith_model):
    return warm_arith_model


def config_for(tmp_path, model, **changes) -> RunConfig:
    base = dict(
        model=str(model),
        max_steps=2,
        num_generations=4,
        prompts_per_step=1,
        gradient_accumulation_steps=2,
        max_completion_length=8,
        learning_rate=1e-3,
        save_steps=100,
        output_dir=str(tmp_path / "run"),
    )
    return RunConfig(**{**base, **changes})


def assert_offloaded(output_dir, world_size: int) -> list[dict]:
    records = []
    for rank in range(world_size):
        record = json.loads((output_dir / deepspeed_zero2.EVIDENCE.format(rank=rank)).read_text())
        assert record["zero_optimizer"] == "DeepSpeedZeroOptimizer" and record["zero_stage"] == 2, record
        assert record["cpu_offload"] is True and record["optimizer"] == "DeepSpeedCPUAdam", record
        assert record["state_devices"] == ["cpu"] and record["master_devices"] == ["cpu"], record
        assert record["state_bytes"] > 0 and record["world_size"] == world_size, record
        records.append(record)
    return records


def assert_finite_training(result, steps: int, model=None) -> None:
    rows = read_metrics(result.output_dir)
    assert [r["step"] for r in rows] == list(range(1, steps + 1))
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["reward/mean"]) for r in rows), rows
    assert (result.model_dir / "model.safetensors").is_file()
    if model is not None:  # the offloaded optimizer really stepped the weights
        from safetensors.torch import load_file

        assert any(r["grad_norm"] > 0 for r in rows), "no reward variance: the test cannot see an update"
        before, after = (
            load_file(str(model / "model.safetensors")),
            load_file(str(result.model_dir / "model.safetensors")),
        )
        assert any(not torch.equal(before[k], after[k]) for k in before), "no weight changed"


@pytest.mark.slow
def test_zero2_offload_trains_arith_in_one_process(tmp_path, tiny_arith):
    environment = dict(os.environ)
    started = time.monotonic()
    result = train("arith", config_for(tmp_path, tiny_arith), backend="deepspeed-zero2")
    # An in-process run leaves no trace in the environment (transformers sets ACCELERATE_USE_DEEPSPEED,
    # which would make every later run of this process and its children a DeepSpeed run).
    assert dict(os.environ) == environment
    print(
        f"deepspeed-zero2 1 process: {time.monotonic() - started:.1f} s (the first run in a checkout also compiles cpu_adam)"
    )
    assert result.steps == 2
    assert_finite_training(result, 2, tiny_arith)
    (record,) = assert_offloaded(result.output_dir, 1)
    # AdamW's two fp32 moments over every parameter of the model (full fine-tune, one rank).
    from transformers import AutoModelForCausalLM

    params = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(tiny_arith).parameters())
    assert record["state_bytes"] == pytest.approx(2 * 4 * params, rel=0.01)


@pytest.mark.slow
def test_zero2_offload_trains_arith_in_two_processes_with_torchrun(tmp_path, tiny_arith):
    env = envs.make("arith")
    result = deepspeed_zero2.train(
        env,
        config_for(tmp_path, tiny_arith),
        model=tiny_arith,
        launch=LaunchSpec(num_processes=2, main_process_port=29517),
        timeout_s=900,
    )
    assert result.steps == 2
    assert_finite_training(result, 2, tiny_arith)
    records = assert_offloaded(result.output_dir, 2)
    # ZeRO partitions the optimizer state: each rank holds about half of it.
    total = sum(r["state_bytes"] for r in records)
    assert all(abs(r["state_bytes"] - total / 2) <= 0.01 * total for r in records), records


@pytest.mark.slow
def test_zero2_trains_gsm8k_with_lora_in_one_process(tmp_path):
    from rlvr_gym.backends.config import LoraSettings

    env = envs.make("gsm8k")
    model = build_tiny_model(tmp_path / "tiny", env)
    config = config_for(tmp_path, model, max_steps=1, lora=LoraSettings(r=4, alpha=8))
    result = train(env, config, backend="deepspeed-zero2")
    assert_finite_training_lora = read_metrics(result.output_dir)
    assert math.isfinite(assert_finite_training_lora[0]["loss"])
    (record,) = assert_offloaded(result.output_dir, 1)
    assert (result.model_dir / "adapter_model.safetensors").is_file()


def test_zero2_config_offloads_the_optimizer_and_defers_to_trl_arguments():
    config = deepspeed_zero2.zero2_config()
    assert config["zero_optimization"]["stage"] == 2
    assert config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert config["gradient_accumulation_steps"] == "auto" and config["gradient_clipping"] == "auto"
    assert "offload_optimizer" not in deepspeed_zero2.zero2_config(offload=False)["zero_optimization"]
    recipe = RunConfig(**deepspeed_zero2.RECIPE)
    overrides = deepspeed_zero2.training_overrides(recipe, micro_batch_size=deepspeed_zero2.MICRO_BATCH)
    assert overrides["per_device_train_batch_size"] == 1 and recipe.gradient_accumulation_steps == 8
    assert recipe.lora.r == 16 and recipe.lora.target_modules == ("q_proj", "k_proj", "v_proj", "o_proj")


def test_launch_commands_pass_multi_machine_settings_through():
    spec = LaunchSpec(
        num_processes=4, num_machines=2, machine_rank=1, main_process_ip="10.0.0.1", main_process_port=1234
    )
    torchrun = spec.command("rlvr_gym.backends.deepspeed_zero2", ["--job", "j.pkl"])
    assert torchrun[1:3] == ["-m", "torch.distributed.run"]
    assert {
        "--nproc-per-node=4",
        "--nnodes=2",
        "--node-rank=1",
        "--master-addr=10.0.0.1",
        "--master-port=1234",
    } <= set(torchrun)
    assert torchrun[-4:] == ["-m", "rlvr_gym.backends.deepspeed_zero2", "--job", "j.pkl"]
    accelerate = LaunchSpec(**{**spec.__dict__, "launcher": "accelerate"}).command("m")
    assert {"--num_processes=8", "--num_machines=2", "--machine_rank=1", "--main_process_ip=10.0.0.1"} <= set(
        accelerate
    )
    with pytest.raises(ValueError, match="machine_rank"):
        LaunchSpec(num_machines=2, machine_rank=2)


def test_an_unpicklable_env_is_refused_before_launch_with_the_fix(tmp_path):
    from rlvr_gym.backends.engine.launch import write_job

    env = envs.make("arith")
    env.rubric = lambda completion, task: None  # a lambda does not pickle
    with pytest.raises(ValueError, match="module level"):
        write_job(tmp_path, env=env, config=None, model="m", resume=False, overrides={})


def test_cli_passes_launch_settings_only_to_the_multi_process_backend(capsys):
    import argparse

    from rlvr_gym.trainers.cli import CliError, backend_options, build_parser, main

    args = build_parser().parse_args(
        [
            "train",
            "--env",
            "arith",
            "--backend",
            "deepspeed-zero2",
            "--num-processes",
            "2",
            "--num-machines",
            "2",
            "--machine-rank",
            "1",
            "--main-process-ip",
            "10.0.0.2",
            "--launcher",
            "accelerate",
        ]
    )
    (launch,) = backend_options(args).values()
    assert (launch.world_size, launch.machine_rank, launch.main_process_ip, launch.launcher) == (
        4,
        1,
        "10.0.0.2",
        "accelerate",
    )
    with pytest.raises(
        CliError, match="--num-processes.* apply to --backend deepspeed-zero2, not 'fsdp-vllm'"
    ):
        backend_options(argparse.Namespace(**{**vars(args), "backend": "fsdp-vllm"}))
    assert main(["train", "--env", "arith", "--backend", "trl", "--num-processes", "2"]) == 2
    assert "--num-processes" in capsys.readouterr().err


def cli_train(model, output_dir, *flags: str) -> subprocess.Popen:
    """``rlvr-gym train --backend deepspeed-zero2`` as a user types it, in a process of its own."""
    command = [
        sys.executable, "-m", "rlvr_gym.trainers.cli", "train", "--env", "arith", "--model", str(model),
        "--backend", "deepspeed-zero2", "--max-steps", "2", "--num-generations", "4",
        "--prompts-per-step", "2", "--max-completion-length", "8", "--learning-rate", "1e-3",
        "--save-steps", "100", "--output-dir", str(output_dir), "--no-audit", *flags,
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(process: subprocess.Popen, timeout_s: float = 900) -> str:
    out, _ = process.communicate(timeout=timeout_s)
    assert process.returncode == 0, out[-3000:]
    return out


@pytest.mark.slow
def test_two_machines_train_exactly_as_one_machine_with_two_processes(tmp_path, tiny_arith):
    """The multi-machine command line run for real: two launches on this host, one per machine
    rank, meeting at 127.0.0.1; their losses equal one machine running two processes."""
    rendezvous = ["--num-machines", "2", "--main-process-ip", "127.0.0.1", "--main-process-port", "29541"]
    machines = [
        cli_train(tiny_arith, tmp_path / f"machine{rank}", *rendezvous, "--machine-rank", str(rank))
        for rank in (0, 1)
    ]
    for machine in machines:
        finished(machine)
    finished(cli_train(tiny_arith, tmp_path / "one", "--num-processes", "2", "--main-process-port", "29543"))
    two = read_metrics(tmp_path / "machine0")  # rank 0 writes the metrics
    one = read_metrics(tmp_path / "one")
    losses = {"two machines": [r["loss"] for r in two], "one machine": [r["loss"] for r in one]}
    print(f"losses per step: {losses}")
    assert [r["step"] for r in two] == [r["step"] for r in one] == [1, 2]
    assert any(r["grad_norm"] > 0 for r in one), "no reward variance: equal losses would prove little"
    assert losses["two machines"] == losses["one machine"]
    assert [r["reward/mean"] for r in two] == [r["reward/mean"] for r in one]
    for rank in (0, 1):  # each machine ran one rank of a world of two, ZeRO-2 offloaded
        record = json.loads(
            (tmp_path / f"machine{rank}" / deepspeed_zero2.EVIDENCE.format(rank=rank)).read_text()
        )
        assert record["world_size"] == 2 and record["optimizer"] == "DeepSpeedCPUAdam", record
