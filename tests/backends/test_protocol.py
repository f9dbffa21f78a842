"""A finished run's step count and result (``backends/protocol.py``): read from the run's
``trainer_state.json`` in one place, never from a folder name or the last logged step."""

from __future__ import annotations

import json

import pytest

from rlvr_gym.backends.protocol import run_result, steps_done


def test_a_finished_runs_step_count_is_its_trainer_state_not_its_last_logged_step(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    assert steps_done(run) is None
    with pytest.raises(FileNotFoundError, match="did not finish"):
        run_result(run)
    (run / "metrics.jsonl").write_text(json.dumps({"step": 6, "reward/mean": 0.5}) + "\n")
    (run / "trainer_state.json").write_text(json.dumps({"global_step": 7}))
    assert steps_done(run) == 7 and run_result(run).steps == 7  # not the last *logged* step (6)


def test_the_checkpoint_to_resume_is_chosen_by_the_steps_it_holds_not_by_its_name(tmp_path):
    """``checkpoint-N``'s N is a name: the resume point (the trl backend's, and the run folder's
    that every backend and the CLI read) is the complete checkpoint holding the most steps."""
    pytest.importorskip("trl", reason="needs rlvr-gym[trl]")
    from rlvr_gym.backends.trl import last_checkpoint
    from rlvr_gym.trainers.run_dir import RunFolder

    run = tmp_path / "run"
    for name, step in (("checkpoint-12", 3), ("checkpoint-8", 8), ("checkpoint-20", None)):
        (run / name).mkdir(parents=True)
        if step is not None:  # checkpoint-20 was cut off mid-save: no trainer_state.json
            (run / name / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    assert last_checkpoint(run) == run / "checkpoint-8"
    assert RunFolder(run, "resumable", last_checkpoint(run), None).checkpoint_step == 8


def test_every_backend_builds_its_result_in_the_one_place():
    """One home: the names the trl backend, the rank launcher and the run folder use are
    :mod:`rlvr_gym.backends.protocol`'s own functions, not copies."""
    pytest.importorskip("trl", reason="needs rlvr-gym[trl]")
    from rlvr_gym.backends import protocol
    from rlvr_gym.backends import trl as trl_backend
    from rlvr_gym.backends.engine import launch
    from rlvr_gym.trainers import report, run_dir

    assert trl_backend.run_result is launch.run_result is protocol.run_result
    assert trl_backend.steps_done is run_dir.steps_done is report.steps_done is protocol.steps_done
