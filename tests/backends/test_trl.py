"""The trl backend on CPU with the real GRPOTrainer and the tiny offline model."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("trl", reason="the trl backend tests need rlvr-gym[trl]")

import torch
from safetensors.torch import load_file

from rlvr_gym import envs
from rlvr_gym.backends import trl as trl_backend
from rlvr_gym.backends import trl_adapter
from rlvr_gym.backends.config import LoraSettings, RunConfig
from rlvr_gym.backends.metrics import read_metrics
from rlvr_gym.backends.rewards import EnvRewards
from rlvr_gym.trainers.tiny_model import build_tiny_model
from rlvr_gym.trainers.train import train
from rlvr_gym.verifiers import Rubric, Verdict


@pytest.fixture
def tiny_model(warm_arith_model):
    return warm_arith_model


def tiny_config(tmp_path, tiny_model, **changes) -> RunConfig:
    base = dict(
        model=str(tiny_model),
        max_steps=3,
        num_generations=4,
        prompts_per_step=2,
        max_completion_length=12,
        learning_rate=1e-3,
        save_steps=100,
        output_dir=str(tmp_path / "run"),
    )
    return RunConfig(**{**base, **changes})


def weights(path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def test_dataset_has_prompts_and_task_locators():
    env = envs.make("arith", train_size=6)
    dataset = trl_adapter.dataset(env, "train")
    assert len(dataset) == 6 and dataset[2]["prompt"] == env.prompt(env.tasks("train")[2])
    assert dataset[2]["task_index"] == 2 and dataset[2]["task_split"] == "train"
    assert dataset[2]["task_answer"] == env.tasks("train")[2]["answer"]


def test_one_reward_function_per_rubric_component_with_normalized_weights():
    env = envs.make("arith", proximity_weight=0.5)
    rewards = EnvRewards(env, num_generations=2)
    names = [f.__name__ for f in rewards.functions()]
    assert names == ["correct", "proximity"] and rewards.weights == pytest.approx(
        {"correct": 2 / 3, "proximity": 1 / 3}
    )
    task = env.tasks("train")[0]
    gold = int(task["answer"])
    completions = [f"<answer>{gold}</answer>", f"<answer>{gold + 100}</answer>"]
    logged: dict[str, float] = {}
    correct, proximity = (
        f(
            prompts=[None] * 2,
            completions=completions,
            task_split=["train"] * 2,
            task_index=[0, 0],
            log_metric=logged.__setitem__,
        )
        for f in rewards.functions()
    )
    assert correct == [1.0, 0.0] and proximity[0] == 1.0 and 0 < proximity[1] < 0.5
    assert logged["accuracy"] == 0.5 and logged["verifier/errors"] == 0 and logged["advantage/std"] > 0
    rewards.close()


def test_verifier_errors_are_unscored_and_counted_not_zeroed():
    env = envs.make("arith")

    def broken(completion, task):
        raise RuntimeError("verifier bug")

    env.rubric = Rubric({"correct": broken})
    rewards = EnvRewards(env, num_generations=2)
    logged: dict[str, float] = {}
    (reward,) = rewards.functions()
    assert reward(
        prompts=[0, 0],
        completions=["a", "b"],
        task_split=["train"] * 2,
        task_index=[0, 1],
        log_metric=logged.__setitem__,
    ) == [None, None]
    assert logged["verifier/errors"] == 2 and rewards.totals["error"] == 2
    rewards.close()


def test_a_hung_verifier_leaves_the_batch_unscored_within_the_budget():
    env = envs.make("arith")
    import threading

    release = threading.Event()
    env.rubric = lambda completion, task: (release.wait(30), Verdict.fail("wrong_answer"))[1]
    rewards = EnvRewards(env, num_generations=2, timeout_s=0.5)
    logged: dict[str, float] = {}
    (reward,) = rewards.functions()
    assert reward(
        prompts=[0], completions=["a"], task_split=["train"], task_index=[0], log_metric=logged.__setitem__
    ) == [None]
    assert logged["verifier/batch_timeouts"] == 1
    release.set()
    rewards.close()


@pytest.mark.parametrize("lora", [None, LoraSettings(r=4, alpha=8)], ids=["full", "lora"])
def test_grpo_trains_arith_on_cpu_and_writes_metrics(tmp_path, tiny_model, lora):
    config = tiny_config(tmp_path, tiny_model, lora=lora)
    result = train("arith", config, backend="trl")
    assert result.steps == 3
    rows = read_metrics(result.output_dir)
    assert any(r["grad_norm"] > 0 for r in rows), "no group had reward variance: the test cannot see learning"
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in (
        "reward/mean",
        "reward/std",
        "reward/correct/mean",
        "reward/proximity/mean",
        "accuracy",
        "advantage/mean",
        "advantage/std",
        "entropy",
        "completion_length",
        "clipped_ratio",
        "zero_variance_groups",
        "verifier/errors",
        "verifier/timeouts",
        "step_time_s",
        "peak_rss_bytes",
    ):
        assert key in rows[-1], key
        assert math.isfinite(rows[-1][key])
    assert result.plot is not None and result.plot.stat().st_size > 1000
    if lora is None:
        before, after = weights(tiny_model), weights(result.model_dir)
        assert any(not torch.equal(before[k], after[k]) for k in before), "no weight changed"
    else:
        adapter = load_file(str(result.model_dir / "adapter_model.safetensors"))
        assert adapter and any(k.endswith("lora_B.weight") and v.abs().sum() > 0 for k, v in adapter.items())


def test_liger_chunked_loss_matches_trl_loss_on_the_first_step(tmp_path, tiny_model):
    pytest.importorskip("liger_kernel", reason="needs rlvr-gym[liger]")
    plain = train("arith", tiny_config(tmp_path / "plain", tiny_model, max_steps=1), backend="trl")
    liger = train(
        "arith", tiny_config(tmp_path / "liger", tiny_model, max_steps=1, liger_loss=True), backend="trl"
    )
    (p,), (lg,) = read_metrics(plain.output_dir), read_metrics(liger.output_dir)
    assert p["reward/mean"] == lg["reward/mean"]  # same seed, same generations
    assert lg["loss"] == pytest.approx(p["loss"], abs=1e-4)
    assert lg["grad_norm"] == pytest.approx(p["grad_norm"], rel=1e-2, abs=1e-5)


def cli_train(model, out, *extra):
    import sys

    return [
        sys.executable,
        "-m",
        "rlvr_gym.trainers.cli",
        "train",
        "--env",
        "arith",
        "--model",
        str(model),
        "--output-dir",
        str(out),
        "--max-steps",
        "40",
        "--save-steps",
        "2",
        "--num-generations",
        "4",
        "--prompts-per-step",
        "2",
        "--max-completion-length",
        "12",
        "--learning-rate",
        "1e-3",
        *extra,
    ]


@pytest.mark.slow
def test_a_killed_run_resumes_with_the_same_data_order_and_no_lost_metrics(tmp_path, tiny_model):
    import os
    import signal
    import subprocess
    import time

    reference = subprocess.run(
        cli_train(tiny_model, tmp_path / "whole"), capture_output=True, text=True, timeout=600
    )
    assert reference.returncode == 0, reference.stderr[-2000:]
    whole = read_metrics(tmp_path / "whole")

    run_dir = tmp_path / "killed"
    process = subprocess.Popen(
        cli_train(tiny_model, run_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not (run_dir / "checkpoint-4" / "trainer_state.json").exists():
        assert process.poll() is None and time.monotonic() < deadline, (
            "run ended before its checkpoint at step 4"
        )
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert not (run_dir / "final").exists(), "the run finished before it was killed"

    resumed = subprocess.run(
        cli_train(tiny_model, run_dir, "--resume"), capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    rows = read_metrics(run_dir)
    assert [r["step"] for r in rows] == list(range(1, 41)), "steps must continue, each logged once"
    assert [r["reward/mean"] for r in rows] == [r["reward/mean"] for r in whole], "resumed run saw other data"
    assert (run_dir / "final" / "model.safetensors").is_file()


def test_resume_without_a_checkpoint_is_a_clear_error(tmp_path, tiny_model):
    from rlvr_gym.trainers.cli import main

    assert main(cli_train(tiny_model, tmp_path / "empty", "--resume")[3:]) == 2


@pytest.mark.slow
def test_any_env_object_trains_without_env_specific_backend_code(tmp_path):
    """A user-authored env (the README's example) and a data-set env go through the same path."""
    from tests.envs.test_env import Capitals

    for env in (Capitals(), envs.make("gsm8k")):
        folder = tmp_path / type(env).__name__
        model = build_tiny_model(folder / "tiny", env)
        config = tiny_config(folder, model, max_steps=1, num_generations=2, max_completion_length=8)
        result = train(env, config, backend="trl")
        (row,) = read_metrics(result.output_dir)
        names = {f"reward/{name}/mean" for name in env.rubric.normalized_weights}
        assert names <= row.keys() and math.isfinite(row["reward/mean"])


def test_last_checkpoint_skips_one_interrupted_mid_save(tmp_path):
    for step, complete in ((2, True), (4, True), (6, False), (10, False)):
        (tmp_path / f"checkpoint-{step}").mkdir()
        if complete:
            state = tmp_path / f"checkpoint-{step}" / "trainer_state.json"
            state.write_text(json.dumps({"global_step": step}))
    (tmp_path / "checkpoint-tmp").mkdir()
    assert trl_backend.last_checkpoint(tmp_path) == tmp_path / "checkpoint-4"
    assert trl_backend.last_checkpoint(tmp_path / "missing") is None
