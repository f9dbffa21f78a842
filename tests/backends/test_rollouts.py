"""The rollout log (``backends/rollouts.py``): one writer and one record type for training and
eval rollouts, and a resumed run that logs no training step twice."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rlvr_gym import envs
from rlvr_gym.backends.rollouts import Rollout, RolloutLog, read_rollouts


def score_one_training_batch(log: Path, step: int) -> None:
    """What TRL does at ``step``: call the env's reward functions on a batch (real EnvRewards)."""
    transformers = pytest.importorskip("transformers", reason="needs rlvr-gym[trl]")
    from rlvr_gym.backends.rewards import EnvRewards

    env = envs.make("arith")
    task = env.tasks("train")[0]
    rewards = EnvRewards(env, num_generations=2, timeout_s=30, rollout_log=log, rollout_every=5)
    try:
        for function in rewards.functions():
            function(
                prompts=[env.prompt(task)] * 2,
                completions=[f"<answer>{task['answer']}</answer>", "<answer>0</answer>"],
                task_split=["train", "train"],
                task_index=[0, 0],
                trainer_state=transformers.TrainerState(global_step=step),
            )
    finally:
        rewards.close()


def test_a_resumed_run_does_not_log_a_training_step_twice(tmp_path):
    """A run resumed from checkpoint-5 samples step 5 again: the one writer keeps one copy
    (the backends' own writer used to append it a second time)."""
    log = tmp_path / "rollouts.jsonl"
    score_one_training_batch(log, step=5)
    with log.open("a") as out:
        out.write('{"step": 10, "split": "tr')  # killed mid-write after the checkpoint
    score_one_training_batch(log, step=5)  # the resumed process
    rows = read_rollouts(log)
    assert [(r["step"], r["sample"]) for r in rows] == [(5, 0), (5, 1)]
    assert log.read_text().endswith("\n") and rows[0]["verdict"]["passed"]
    with RolloutLog(log, duplicates="skip") as rollouts:
        rollouts.truncate(4)
    assert read_rollouts(log) == []


class TwoAnswers:
    """An eval sampler that writes what the training batch above wrote: the answer, then ``0``."""

    engine = "scripted"

    def __init__(self, env: envs.Env) -> None:
        self.answer = env.tasks("train")[0]["answer"]

    def sample(self, prompt, n, seed):
        return [f"<answer>{self.answer}</answer>", "<answer>0</answer>"][:n]


def test_training_and_eval_rollouts_are_one_record_type(tmp_path):
    """The rows a training batch and an eval leave are the same record: each is a
    :class:`Rollout` as written (``Rollout(**row).to_dict() == row``) with the same fields, apart
    from the training ``step`` and the eval's ``env``, and the same completion gets the same verdict."""
    from rlvr_gym.trainers.evaluate import evaluate

    score_one_training_batch(tmp_path / "train.jsonl", step=5)
    env = envs.make("arith")
    result = evaluate(
        env, "unused", n=2, k=[1], split="train", limit=1, output_dir=tmp_path / "eval",
        sampler=TwoAnswers(env), progress=False,
    )  # fmt: skip
    trained, evaluated = read_rollouts(tmp_path / "train.jsonl"), result.rollouts
    for row in (*trained, *evaluated):
        assert Rollout(**row).to_dict() == row, row
    fields = {f.name for f in dataclasses.fields(Rollout)} - {"turns"}
    assert {*trained[0]} == fields - {"env"} and {*evaluated[0]} == fields - {"step"}
    assert [r["verdict"] for r in trained] == [r["verdict"] for r in evaluated]
