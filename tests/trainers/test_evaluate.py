"""rlvr_gym.trainers.evaluate: real tiny-model evals on arith and gsm8k, pass@k arithmetic, resume."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="evaluate needs rlvr-gym[trl]")

from rlvr_gym import envs
from rlvr_gym.backends.rollouts import RolloutLog, read_rollouts
from rlvr_gym.trainers.cli import main
from rlvr_gym.trainers.evaluate import evaluate, make_sampler, vllm_available
from rlvr_gym.trainers.tiny_model import build_tiny_model
from rlvr_gym.trainers.warm_start import warm_start

ROOT = Path(__file__).resolve().parents[2]


EASY = {"num_steps": 1, "max_operand": 3, "word_problems": False}
EASY_ARGS = [arg for key, value in EASY.items() for arg in ("--env-arg", f"{key}={json.dumps(value)}")]


def easy_arith():
    """One-step sums of small numbers: a briefly warm-started tiny model gets some right."""
    return envs.make("arith", **EASY)


@pytest.fixture(scope="module")
def arith_model(tmp_path_factory) -> str:
    """A tiny arith model with a short warm start, so some answers are right and some wrong."""
    env = easy_arith()
    tiny = build_tiny_model(tmp_path_factory.mktemp("tiny"), env)
    return str(warm_start(tiny, env, tmp_path_factory.mktemp("warm"), steps=100))


def hand_pass_at_k(rows, n: int, k: int) -> float:
    """pass@k from the rollouts with explicit binomials, 1 - C(n-c, k) / C(n, k), per task."""
    correct: dict[int, int] = {}
    for row in rows:
        correct[row["index"]] = correct.get(row["index"], 0) + bool(row["verdict"]["passed"])
    return sum(1 - math.comb(n - c, k) / math.comb(n, k) for c in correct.values()) / len(correct)


class ScriptedSampler:
    """Returns completions with a known number of right answers per task (c = index % (n+1))."""

    engine = "scripted"

    def __init__(self, env):
        self.env = env
        self.calls = 0

    def sample(self, prompt, n, seed):
        self.calls += 1
        task = next(t for t in self.env.tasks("test") if self.env.prompt(t) == prompt)
        index = list(self.env.tasks("test")).index(task)
        right = index % (n + 1)
        return [f"<answer>{task['answer']}</answer>"] * right + ["<answer>nope</answer>"] * (n - right)


def test_pass_at_k_of_an_eval_equals_hand_computed_values(tmp_path):
    """Tasks 0..4 get c = 0, 1, 2, 3, 0 right of n=3: pass@1 = 6/15, pass@2 = (0+2/3+1+1+0)/5."""
    env = envs.make("arith")
    result = evaluate(
        env,
        "unused",
        n=3,
        k=[1, 2, 3],
        limit=5,
        output_dir=tmp_path,
        sampler=ScriptedSampler(env),
        progress=False,
    )
    s = result.summary
    assert s["pass@k"]["pass@1"] == pytest.approx(6 / 15)
    assert s["pass@k"]["pass@2"] == pytest.approx((0 + 2 / 3 + 1 + 1 + 0) / 5)
    assert s["pass@k"]["pass@3"] == pytest.approx(3 / 5)
    assert s["accuracy"] == pytest.approx(6 / 15)
    assert s["reasons"] == {"bad_format": 9, "correct": 6}
    assert s["reward/correct/mean"] == pytest.approx(6 / 15)
    assert s["component_reasons"]["correct"]["correct"] == 6
    assert s["this_session"]["scoring"] == {"scorer": "local"}  # where it was scored: no "backend"


def check_real_eval(result, n: int, tasks: int, components: set[str]) -> None:
    s = result.summary
    assert s["engine"] == "transformers" and s["tasks"] == tasks and s["rollouts"] == tasks * n
    assert len(read_rollouts(result.output_dir / "rollouts.jsonl")) == tasks * n
    assert sum(s["reasons"].values()) == tasks * n
    assert {k.split("/")[1] for k in s if k.startswith("reward/") and k != "reward/mean"} == components
    for k in s["k"]:
        assert s["pass@k"][f"pass@{k}"] == pytest.approx(hand_pass_at_k(result.rollouts, n, k))
    assert s["accuracy"] == pytest.approx(sum(r["verdict"]["passed"] for r in result.rollouts) / (tasks * n))
    row = result.rollouts[0]
    assert isinstance(row["completion"], str) and row["prompt"][-1]["role"] == "user"
    assert set(row["verdict"]) >= {"score", "passed", "reason", "details"}
    assert s["this_session"]["rollouts_per_s"] > 0


@pytest.mark.slow
def test_tiny_model_on_arith(arith_model, tmp_path):
    result = evaluate(
        easy_arith(),
        arith_model,
        n=4,
        k=[1, 2, 4],
        limit=10,
        output_dir=tmp_path,
        max_new_tokens=24,
        progress=False,
    )
    check_real_eval(result, 4, 10, {"correct", "proximity"})
    assert 0 < result.summary["accuracy"] < 1, "the warm-started model should get some, not all, right"
    assert result.summary["pass@k"]["pass@4"] >= result.summary["pass@k"]["pass@1"]


@pytest.mark.slow
def test_tiny_model_on_gsm8k(tmp_path):
    env = envs.make("gsm8k")
    model = build_tiny_model(tmp_path / "tiny", env)
    result = evaluate(
        env, model, n=2, k=[1, 2], limit=3, output_dir=tmp_path / "eval", max_new_tokens=16, progress=False
    )
    check_real_eval(result, 2, 3, {"correct", "format"})
    assert result.summary["accuracy"] == 0.0  # an untrained model does not solve GSM8K
    assert result.summary["reasons"].get("no_answer", 0) + result.summary["reasons"].get("bad_format", 0) > 0


class Interrupted(BaseException):  # like Ctrl-C: not a verifier bug, so not turned into a verdict
    pass


@pytest.mark.slow
def test_interrupted_eval_resumes_without_rescoring_and_matches_an_uninterrupted_one(arith_model, tmp_path):
    env = easy_arith()
    scored: list[str] = []
    real_rubric = env.rubric  # a plain-function rubric is scored item by item: each call is one rollout

    def score_then_die(completion, task):
        if len(scored) == 7:
            raise Interrupted  # dies mid-task: task 1 has 3 of 4 samples scored, none persisted
        scored.append(completion)
        return real_rubric(completion, task)

    env.rubric = score_then_die
    # one task's group per scoring batch: what is persisted is whole groups (task 0 here)
    settings = dict(n=4, k=[1, 4], limit=5, max_new_tokens=24, progress=False, batch_rollouts=1)
    with pytest.raises(Interrupted):
        evaluate(env, arith_model, output_dir=tmp_path / "a", **settings)
    first = read_rollouts(tmp_path / "a" / "rollouts.jsonl")
    assert len(first) == 4

    scored.clear()
    env.rubric = lambda completion, task: (scored.append(completion), real_rubric(completion, task))[1]
    resumed = evaluate(env, arith_model, output_dir=tmp_path / "a", **settings)
    assert len(scored) == 20 - 4, "finished rollouts must not be scored again"
    session = resumed.summary["this_session"]
    assert (session["rollouts_scored"], session["rollouts_resumed"]) == (16, 4)
    assert resumed.rollouts[:4] == first

    whole = evaluate(easy_arith(), arith_model, output_dir=tmp_path / "b", **settings)
    assert [r["completion"] for r in resumed.rollouts] == [r["completion"] for r in whole.rollouts]
    assert resumed.summary["pass@k"] == whole.summary["pass@k"]


@pytest.mark.slow
def test_killed_cli_eval_resumes_without_rescoring(arith_model, tmp_path):
    """SIGKILL a real `rlvr-gym eval` process mid-run, then resume it."""
    out = tmp_path / "eval"
    args = ["--env", "arith", *EASY_ARGS, "--model", arith_model, "--n", "4", "--limit", "60"]
    args += ["--max-new-tokens", "24"]
    args += ["--output-dir", str(out), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "rlvr_gym.trainers.cli", "eval", *args], cwd=ROOT)
    log = out / "rollouts.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and log.read_bytes().count(b"\n") >= 10:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the eval finished (or failed) before it could be killed"
    done = read_rollouts(log)
    assert 10 <= len(done) < 240

    env = easy_arith()
    calls = []
    real_rubric = env.rubric
    env.rubric = lambda completion, task: (calls.append(1), real_rubric(completion, task))[1]
    resumed = evaluate(
        env, arith_model, n=4, k=[1, 4], limit=60, output_dir=out, max_new_tokens=24, progress=False
    )
    assert len(calls) == 240 - len(done)
    assert len(read_rollouts(log)) == 240 == resumed.summary["rollouts"]
    keyed = {(r["index"], r["sample"]): r for r in resumed.rollouts}
    assert all(keyed[(r["index"], r["sample"])] == r for r in done)


def test_a_torn_last_line_is_trimmed_on_resume(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    whole = {"split": "test", "index": 0, "sample": 0, "completion": "x", "verdict": {}}
    path.write_text(json.dumps(whole) + "\n" + '{"split": "test", "ind')
    with RolloutLog(path) as log:
        assert (None, "test", 0, 0) in log and len(log.rows) == 1
        log.append({**whole, "sample": 1})
        with pytest.raises(ValueError, match="already"):
            log.append(whole)
    assert [r["sample"] for r in read_rollouts(path)] == [0, 1]


def test_resuming_with_other_settings_is_refused(tmp_path):
    env = envs.make("arith")
    evaluate(env, "m", n=2, limit=2, output_dir=tmp_path, sampler=ScriptedSampler(env), progress=False)
    with pytest.raises(ValueError, match="n differ"):
        evaluate(env, "m", n=3, limit=2, output_dir=tmp_path, sampler=ScriptedSampler(env), progress=False)
    sampler = ScriptedSampler(env)
    again = evaluate(env, "m", n=2, limit=2, output_dir=tmp_path, sampler=sampler, progress=False)
    assert sampler.calls == 0 and again.summary["this_session"]["rollouts_resumed"] == 4


def test_bad_k_is_refused(tmp_path):
    with pytest.raises(ValueError, match="k must be"):
        evaluate("arith", "m", n=2, k=3, output_dir=tmp_path)


@pytest.mark.skipif(
    vllm_available()[0], reason="vLLM can run here; the refusal path is for machines without it"
)
def test_vllm_is_refused_with_its_reason_where_it_cannot_run(tmp_path):
    with pytest.raises(
        RuntimeError, match="cannot evaluate with vLLM here: (vllm is not installed|.*CUDA GPU)"
    ):
        make_sampler(tmp_path, "vllm", max_new_tokens=4, temperature=1.0)


def test_cli_eval_prints_the_summary(arith_model, tmp_path, capsys):
    out = tmp_path / "e"
    code = main(
        [
            "eval",
            "--env",
            "arith",
            *EASY_ARGS,
            "--model",
            arith_model,
            "--n",
            "2",
            "--limit",
            "2",
            "--max-new-tokens",
            "8",
        ]
        + ["--output-dir", str(out), "--no-progress"]
    )
    text = capsys.readouterr().out
    assert code == 0 and "pass@1" in text and "pass@2" in text and "reasons:" in text
    assert json.loads((out / "summary.json").read_text())["rollouts"] == 4


def test_cli_eval_errors_are_one_line_exit_2(tmp_path, capsys):
    assert main(["eval", "--env", "arith", "--output-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert (
        main(
            ["eval", "--env", "arith", "--model", "m", "--n", "2", "--k", "3", "--output-dir", str(tmp_path)]
        )
        == 2
    )
