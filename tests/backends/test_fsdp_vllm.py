"""fsdp-vllm on a CPU machine: it refuses (naming what is missing), its vLLM server lifecycle runs
against a real subprocess, its FSDP/vLLM arguments are generated, and its FSDP2 wrap plan shards
the tiny model across two gloo ranks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.support.timing import bound

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

import torch

from rlvr_gym import envs
from rlvr_gym.backends import fsdp_vllm
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.engine.vllm_server import VLLMServer, VLLMServerError, trl_vllm_serve_command
from rlvr_gym.trainers.tiny_model import build_tiny_model
from tests.support.torchrun import free_port, run_two_ranks

FAKE_SERVER = (Path(__file__).resolve().parents[1] / "support" / "fake_vllm_server.py")
ON_CPU = not torch.cuda.is_available()


def fake(port: int, *extra: str) -> list[str]:
    return [sys.executable, str(FAKE_SERVER), "--port", str(port), *extra]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its new parent) is gone for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), envs.make("arith"))


@pytest.mark.skipif(not ON_CPU, reason="checks the refusal on a machine without CUDA")
def test_refuses_on_cpu_naming_what_is_missing(tmp_path, tiny_model):
    from rlvr_gym.trainers.train import train

    ok, why = fsdp_vllm.available()
    assert not ok and "CUDA" in why
    if importlib_missing("vllm"):
        assert "vllm" in why
    config = RunConfig(model=str(tiny_model), max_steps=1, output_dir=str(tmp_path / "run"))
    with pytest.raises(RuntimeError, match="'fsdp-vllm' cannot run here: .*CUDA") as refused:
        train("arith", config, backend="fsdp-vllm")
    assert why in str(refused.value)
    # The backend itself refuses too, whoever calls it (no silent DDP fallback).
    with pytest.raises(RuntimeError, match="fsdp-vllm cannot run here: .*CUDA"):
        fsdp_vllm.train(envs.make("arith"), config, model=tiny_model)
    assert not (tmp_path / "run" / "metrics.jsonl").exists(), "it trained something instead of refusing"
    for mode in ("server", "colocate"):
        assert "CUDA" in fsdp_vllm.available(mode)[1]


def importlib_missing(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is None


def test_the_cli_refuses_with_the_same_one_line_message(tmp_path, tiny_model, capsys):
    if not ON_CPU:
        pytest.skip("CPU refusal")
    from rlvr_gym.trainers.cli import main

    code = main(
        [
            "train",
            "--env",
            "arith",
            "--model",
            str(tiny_model),
            "--backend",
            "fsdp-vllm",
            "--max-steps",
            "1",
            "--output-dir",
            str(tmp_path / "cli"),
        ]
    )
    assert code == 2 and "CUDA" in capsys.readouterr().err


def test_server_starts_answers_health_and_leaves_no_process_after_teardown(tmp_path):
    port = free_port()
    child_file = tmp_path / "child.pid"
    with VLLMServer(
        fake(port, "--startup-delay", "0.5", "--child-pid-file", str(child_file)),
        port=port,
        startup_timeout_s=30,
    ) as server:
        assert server.healthy()
        server.check()  # running: no error
        pid, child = server.process.pid, int(child_file.read_text())
        assert alive(pid) and alive(child)
    assert not alive(pid), "server process left running"
    assert not alive(child), "the server's child process left running"
    assert not server.healthy()


def test_a_server_that_dies_at_start_fails_with_its_own_last_words(tmp_path):
    port = free_port()
    server = VLLMServer(
        fake(port, "--fail-at-start"), port=port, startup_timeout_s=30, log_path=tmp_path / "log"
    )
    started = time.monotonic()
    with pytest.raises(VLLMServerError, match=r"(?s)exited with code 1: .*CUDA out of memory"):
        server.start()
    assert time.monotonic() - started < bound(20), "a dead server must fail at once, not at the timeout"


def test_a_crash_while_training_is_a_clear_error_and_is_cleaned_up(tmp_path):
    port = free_port()
    with (
        pytest.raises(VLLMServerError, match=r"(?s)exited with code 3: .*engine core died"),
        VLLMServer(fake(port, "--crash-after", "1"), port=port, startup_timeout_s=30) as server,
    ):
        pid = server.process.pid
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            server.check()  # what the backend calls when training fails
            time.sleep(0.1)
    assert not alive(pid)


def test_a_server_that_never_gets_healthy_times_out_and_is_killed(tmp_path):
    port = free_port()
    server = VLLMServer(fake(port, "--startup-delay", "60"), port=port, startup_timeout_s=1.5)
    with pytest.raises(VLLMServerError, match="not healthy after 2 s"):
        server.start()
    assert not alive(server.process.pid)


def test_the_command_is_trl_vllm_serve_on_the_given_port():
    command = trl_vllm_serve_command("Qwen/Qwen3-0.6B", port=8123, data_parallel_size=2)
    assert command[:4] == ["trl", "vllm-serve", "--model", "Qwen/Qwen3-0.6B"]
    assert command[command.index("--port") + 1] == "8123"
    assert command[command.index("--data-parallel-size") + 1] == "2"


def test_fsdp2_and_vllm_arguments_are_accepted_by_trl(tiny_model, tmp_path):
    overrides = fsdp_vllm.fsdp_overrides(tiny_model, mode="server", port=8123)
    assert overrides["fsdp_config"]["version"] == 2
    assert overrides["fsdp_config"]["transformer_layer_cls_to_wrap"] == ["Qwen2DecoderLayer"]
    assert overrides["vllm_mode"] == "server" and overrides["vllm_server_port"] == 8123
    colocate = fsdp_vllm.fsdp_overrides(tiny_model, mode="colocate")
    assert colocate["vllm_mode"] == "colocate" and "vllm_server_port" not in colocate
    # TRL's own config class takes every key (a misspelt field would raise here).
    from trl import GRPOConfig as TRLConfig

    names = set(TRLConfig.__dataclass_fields__)
    assert set(overrides) <= names and set(colocate) <= names
    with pytest.raises(ValueError, match="mode"):
        fsdp_vllm.fsdp_overrides(tiny_model, mode="offline")


@pytest.mark.slow
def test_fsdp2_wrap_plan_shards_the_model_over_two_gloo_ranks(tmp_path, tiny_model):
    out = tmp_path / "ranks"
    out.mkdir()
    ranks = run_two_ranks((Path(__file__).resolve().parents[1] / "support" / "fsdp_gloo_worker.py"), str(tiny_model), out=out)
    for rank in ranks:
        assert rank["world"] == 2 and rank["classes"] == ["Qwen2DecoderLayer"] and rank["all_dtensor"]
        assert rank["fsdp_module_types"], "no module was turned into an FSDP module"
    # Each rank holds about half of the parameters (dim-0 shards), together all of them.
    full = ranks[0]["full_params"]
    assert sum(r["local_params"] for r in ranks) == full
    assert all(abs(r["local_params"] - full / 2) < 0.05 * full for r in ranks)
    assert ranks[0]["loss"] == pytest.approx(ranks[1]["loss"]) and ranks[0]["loss"] > 0
