"""Every example in examples/ runs here, offline and at a tiny size (import + main(argv))."""

from __future__ import annotations

import json
import sys
import types

import pytest

from examples import author_env, property_test_verifier
from rlvr_gym import backends


def test_author_env_registers_checks_and_scores(capsys):
    assert author_env.main(["--size", "12"]) == 0
    out = capsys.readouterr().out
    assert (
        "check_env(examples/vowels-v0): spaces, reset, determinism, step, episode, verify_pure, oracle, wrong_answers, spec, instances, pickle, close"
        in out
    )
    assert "reward 1.00 (correct)" in out and "reward 0.00 (wrong_answer)" in out
    from rlvr_gym import envs

    env = envs.make(author_env.ENV_ID)
    task = env.tasks("test")[3]
    assert env.verify(f"<answer>{task['answer']}</answer>", task).passed


def test_property_test_verifier_passes_the_good_one_and_catches_the_naive_one(capsys):
    assert property_test_verifier.main(["--max-examples", "25"]) == 0
    out = capsys.readouterr().out
    assert (
        out.count("holds every property") == 3
        and "NaiveVerifier caught: [equivalent renderings agree]" in out
    )


def test_the_fraction_parser_never_evaluates_and_handles_mixed_numbers():
    from fractions import Fraction

    parse = property_test_verifier.parse_fraction
    assert parse("3\\frac{1}{2}") == parse("3 1/2") == parse("$3.5$") == Fraction(7, 2)
    assert parse("-\\frac{5}{8}") == parse("\\frac{-5}{8}") == Fraction(-5, 8)
    assert parse("1/0") is None and parse("__import__('os')") is None


pytest.importorskip("trl", reason="the training examples need rlvr-gym[trl]")

from examples import eval_before_after, train_gsm8k, train_tool_use  # noqa: E402


def test_train_gsm8k_recipe_defaults(capsys):
    assert train_gsm8k.main(["--print-config"]) == 0
    config = json.loads(capsys.readouterr().out)
    assert config["model"] == "Qwen/Qwen2.5-1.5B-Instruct" and config["num_generations"] == 4
    assert config["gradient_accumulation_steps"] == 8 and config["learning_rate"] == 5e-5
    assert config["lora"]["r"] == 16 and config["lora"]["target_modules"] == [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
    ]
    expected = "deepspeed-zero2" if "deepspeed-zero2" in backends.BACKENDS else "auto"
    assert config["backend"] == expected


def test_train_gsm8k_refuses_a_backend_that_cannot_run_here(monkeypatch, tmp_path, capsys):
    fake = types.ModuleType("tests_fake_backend")
    fake.available = lambda: (False, "needs a CUDA GPU and none is visible")
    monkeypatch.setitem(sys.modules, "tests_fake_backend", fake)
    monkeypatch.setitem(backends.BACKENDS, "fake-gpu", "tests_fake_backend")
    assert train_gsm8k.main(["--tiny", "--backend", "fake-gpu", "--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "train_gsm8k: error: backend 'fake-gpu' cannot run here: needs a CUDA GPU and none is visible\n"
    )
    assert not (tmp_path / "config.json").exists(), "a refused backend must not start the run"
    assert train_gsm8k.main(["--tiny", "--backend", "nope"]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err


@pytest.mark.slow
def test_train_gsm8k_tiny_on_trl(tmp_path, capsys):
    out = tmp_path / "run"
    assert train_gsm8k.main(["--tiny", "--backend", "trl", "--max-steps", "1", "--output-dir", str(out)]) == 0
    assert "1 steps; reward/mean per step:" in capsys.readouterr().out
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert rows and "reward/correct/mean" in rows[0] and "reward/format/mean" in rows[0]
    adapter = json.loads((out / "final" / "adapter_config.json").read_text())
    assert adapter["r"] == 16 and sorted(adapter["target_modules"]) == [
        "k_proj",
        "o_proj",
        "q_proj",
        "v_proj",
    ]


@pytest.mark.slow
def test_eval_before_after_training(tmp_path, capsys):
    out = tmp_path / "run"
    easy = ["--env-arg", "num_steps=1", "--env-arg", "max_operand=3", "--env-arg", "word_problems=false"]
    argv = ["--tasks", "6", "--n", "4", "--steps", "2", "--warm-start-steps", "60", "--no-progress"]
    assert eval_before_after.main([*argv, *easy, "--output-dir", str(out)]) == 0
    text = capsys.readouterr().out
    before = json.loads((out / "eval-before" / "summary.json").read_text())
    after = json.loads((out / "eval-after" / "summary.json").read_text())
    assert before["rollouts"] == after["rollouts"] == 24
    assert after["model"].endswith("final") and before["model"].endswith("tiny-model")
    assert after["reward/mean"] > before["reward/mean"], text
    page = (out / "report.html").read_text()
    assert "eval-before" in page and "eval-after" in page and page.count("<img ") >= 3
    assert "report:" in text and "pass@4" in text


RISE_FLOOR = 0.10
"""Least rise (last fifth minus first fifth of the GRPO steps) of accuracy and of tool calls an
episode in the tool demo's first 60 GRPO steps (its lr is constant, so they are the 100-step demo's
first 60). Measured 2026-11-27 at seeds 0/1/2/3: accuracy +0.16/+0.17/+0.23/+0.22, calls
+0.24/+0.20/+0.25/+0.21; the floor leaves >= 0.06 for another machine's float order."""


@pytest.mark.slow
def test_grpo_raises_the_tool_envs_accuracy_and_call_rate_after_a_mixed_warm_start(
    tmp_path, capsys, monkeypatch
):
    """The tool demo as shipped (800 warm-start steps, 60% of them calling; GRPO through TRL's tool
    loop, its first 60 steps of 100 to save suite time): the warm start leaves a policy that calls in ~70% of episodes, and GRPO raises
    both the call rate and accuracy. Seed 0, the seed with the smallest measured rise. One torch
    thread, as measured: on the 2 shared cores here two threads made a warm-start step 0.6-2.6 s
    against 0.11-0.27 s on one, and on one the run reproduces the measured trajectory exactly."""
    import torch

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    out = tmp_path / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert train_tool_use.main(["--seed", "0", "--max-steps", "60", "--output-dir", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    text = capsys.readouterr().out
    assert "accuracy: first fifth" in text and "tool calls an episode: first fifth" in text
    marker = json.loads((out / "warm-start" / "warm_start.json").read_text())
    assert marker["env_id"] == "big-add-v0" and marker["tool_fraction"] == 0.6
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "tools/calls_per_episode" in r]
    assert len(rows) == 60
    calls = train_tool_use.fifths([r["tools/calls_per_episode"] for r in rows])
    accuracy = train_tool_use.fifths([r["accuracy"] for r in rows])
    assert calls[0] < 0.85, f"the warm start left no call decision to select: {text}"
    assert calls[1] - calls[0] >= RISE_FLOOR, text
    assert accuracy[1] - accuracy[0] >= RISE_FLOOR, text
