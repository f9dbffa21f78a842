"""A training run people can watch: a short console, tensorboard scalars, training samples in the report.

One short CLI run (10 steps from the session's warm tiny model) is checked for all three, so the
suite pays for one training run, not three.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

from rlvr_gym.trainers.cli import main

STEPS = 10
STDOUT_LIMIT = 3_000  # bytes: was ~1,100 per step (22 KB for 20 steps) when the raw dict was printed


@pytest.fixture(scope="module")
def run(warm_arith_model, tmp_path_factory):
    pytest.importorskip("tensorboard", reason="needs rlvr-gym[tensorboard]")
    out = tmp_path_factory.mktemp("console") / "run"
    capture = pytest.MonkeyPatch()
    import io
    import sys

    stdout, stderr = io.StringIO(), io.StringIO()
    capture.setattr(sys, "stdout", stdout)
    capture.setattr(sys, "stderr", stderr)
    try:
        code = main(
            [
                "train",
                "--env",
                "arith",
                "--model",
                str(warm_arith_model),
                "--max-steps",
                str(STEPS),
                "--num-generations",
                "4",
                "--prompts-per-step",
                "2",
                "--max-completion-length",
                "12",
                "--learning-rate",
                "1e-3",
                "--save-steps",
                "1000",
                "--report-to",
                "tensorboard",
                "--rollout-log-steps",
                "5",
                "--output-dir",
                str(out),
            ]
        )
    finally:
        capture.undo()
    assert code == 0, stderr.getvalue()[-2000:]
    return out, stdout.getvalue(), stderr.getvalue()


@pytest.mark.slow
def test_stdout_of_a_run_stays_short_and_holds_no_raw_log_dict(run):
    out, stdout, stderr = run
    assert len(stdout.encode()) < STDOUT_LIMIT, stdout
    assert "'loss'" not in stdout and "'loss'" not in stderr  # the raw dict goes to metrics.jsonl only
    assert "step 10/10" in stdout and "reward" in stdout and "acc" in stdout  # the summary line
    assert "Writing model shards" not in stderr and "Loading weights" not in stderr
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == STEPS and all("loss" in r and 0 <= r["verifier/share"] <= 1 for r in rows)


@pytest.mark.slow
def test_tensorboard_event_files_hold_the_reward_scalar(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, _, _ = run
    event_files = list(out.rglob("events.out.tfevents.*"))
    assert event_files, f"no tensorboard event file under {out}"
    rewards = []
    for path in event_files:
        events = EventAccumulator(str(path))
        events.Reload()
        if "train/reward" in events.Tags()["scalars"]:
            rewards += [e.value for e in events.Scalars("train/reward")]
    assert len(rewards) == STEPS and all(0 <= r <= 1 for r in rewards)


@pytest.mark.slow
def test_training_rollouts_are_sampled_to_the_run_folder_and_shown_in_the_report(run):
    from rlvr_gym.trainers.report import build_report

    out, _, _ = run
    rows = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in rows}) == [0, 5]
    assert all(r["completion"] is not None and "reason" in r["verdict"] for r in rows)
    assert all(set(r["verdict"]["details"]["scores"]) == {"correct", "proximity"} for r in rows)
    page = build_report(out).page.read_text()
    assert "train step 5" in page and "Run config" in page and "learning_rate" in page
