"""Run folders: train never mixes two runs in one folder, --overwrite removes what a run wrote (and nothing else),
--resume checks the folder before any model is built, and only the last checkpoints are kept."""

from __future__ import annotations

import json
import time

import pytest

from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.run_layout import MODEL_CARD_FILE, OPTIMIZER_FILE, written_by_a_run
from rlvr_gym.error import InvalidArgumentError, MissingPathError
from rlvr_gym.trainers import run_dir
from rlvr_gym.trainers.cli import main
from tests.support.timing import bound


def fake_run(folder, *, checkpoints=(), final=False, metrics=0):
    """A run folder's files as train leaves them (config.json, checkpoint-N, final/, metrics)."""
    folder.mkdir(parents=True)
    RunConfig(output_dir=str(folder)).save(folder / "config.json")
    for step in checkpoints:
        (folder / f"checkpoint-{step}").mkdir()
        (folder / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    if final:
        (folder / "final").mkdir()
        (folder / "final" / "config.json").write_text("{}")
    (folder / "metrics.jsonl").write_text("".join(json.dumps({"step": s + 1}) + "\n" for s in range(metrics)))
    return folder


def test_states(tmp_path):
    assert run_dir.inspect(tmp_path / "missing").state == "fresh"
    (tmp_path / "empty").mkdir()
    assert run_dir.inspect(tmp_path / "empty").state == "fresh"
    assert run_dir.inspect(fake_run(tmp_path / "failed-start")).state == "fresh"  # config.json, no steps
    assert run_dir.inspect(
        fake_run(tmp_path / "done", checkpoints=(25, 50), final=True, metrics=50)
    ).state == ("finished")
    killed = run_dir.inspect(fake_run(tmp_path / "killed", checkpoints=(25,), metrics=30))
    assert killed.state == "resumable" and killed.checkpoint_step == 25
    assert run_dir.inspect(fake_run(tmp_path / "stopped", metrics=3)).state == "stopped"
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "eval_settings.json").write_text("{}")
    assert run_dir.inspect(tmp_path / "eval").state == "foreign"
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "qwen2"}))  # a model's config, not a run's
    assert run_dir.inspect(model).state == "foreign"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("finished", "holds a finished run"), ("stopped", "logged steps"), ("foreign", "not an rlvr-gym run")],
)
def test_train_refuses_a_used_folder_with_one_line_before_loading_anything(tmp_path, capsys, kind, expected):
    folder = tmp_path / kind
    if kind == "finished":
        fake_run(folder, checkpoints=(2,), final=True, metrics=2)
    elif kind == "stopped":
        fake_run(folder, metrics=2)
    else:
        folder.mkdir()
        (folder / "notes.txt").write_text("mine")
    before = sorted(p.name for p in folder.iterdir())
    started = time.perf_counter()
    code = main(["train", "--env", "arith", "--output-dir", str(folder), "--no-audit"])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert "--overwrite" in err and "another --output-dir" in err
    assert sorted(p.name for p in folder.iterdir()) == before, "a refused run changed the folder"
    assert time.perf_counter() - started < bound(10), "refusing must not build or warm-start a model first"


def test_resume_checks_the_folder_before_building_the_model(tmp_path, capsys):
    """Before: --resume on an empty folder built the tiny model and ran the warm start, then refused."""
    started = time.perf_counter()
    assert main(["train", "--env", "arith", "--output-dir", str(tmp_path / "new"), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "--resume: no checkpoint-N" in err and "drop --resume" in err
    assert not (tmp_path / "new").exists(), "nothing may be written before refusing"
    assert time.perf_counter() - started < bound(10)


def test_resume_and_overwrite_contradict(tmp_path):
    with pytest.raises(InvalidArgumentError, match="contradict"):
        run_dir.prepare(tmp_path, resume=True, overwrite=True, max_steps=10)


def test_resume_of_a_run_already_at_max_steps_says_so(tmp_path):
    folder = fake_run(tmp_path / "done", checkpoints=(10,), final=True, metrics=10)
    with pytest.raises(InvalidArgumentError, match="already reached step 10"):
        run_dir.prepare(folder, resume=True, overwrite=False, max_steps=10)
    assert run_dir.prepare(folder, resume=True, overwrite=False, max_steps=20).checkpoint_step == 10


def test_overwrite_never_removes_a_foreign_folder(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(run_dir.RunFolderInUseError, match="removes only run folders"):
        run_dir.prepare(tmp_path, resume=False, overwrite=True, max_steps=10)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_resume_with_nothing_to_resume_is_missing_path(tmp_path):
    with pytest.raises(MissingPathError):
        run_dir.prepare(fake_run(tmp_path / "r", metrics=3), resume=True, overwrite=False, max_steps=10)


def test_keep_checkpoints_is_validated_and_reaches_trl():
    pytest.importorskip("trl")
    from rlvr_gym.backends.rewards import EnvRewards
    from rlvr_gym.backends.trl import trl_config
    from rlvr_gym.envs import make

    with pytest.raises(InvalidArgumentError, match="keep_checkpoints"):
        RunConfig(keep_checkpoints=-1)
    rewards = EnvRewards(make("arith"), num_generations=2)
    try:
        assert trl_config(RunConfig(keep_checkpoints=3, output_dir="x"), rewards).save_total_limit == 3
        assert trl_config(RunConfig(keep_checkpoints=0, output_dir="x"), rewards).save_total_limit is None
    finally:
        rewards.close()


def cli_train(model, out, *extra):
    return [
        "train",
        "--env",
        "arith",
        "--model",
        str(model),
        "--output-dir",
        str(out),
        "--num-generations",
        "2",
        "--prompts-per-step",
        "2",
        "--max-completion-length",
        "6",
        "--save-steps",
        "1",
        "--no-audit",
        *extra,
    ]


def checkpoints(folder):
    return sorted(int(p.name.rsplit("-", 1)[1]) for p in folder.glob("checkpoint-*"))


@pytest.mark.slow
def test_overwrite_replaces_the_run_whole_and_old_checkpoints_are_rotated(warm_arith_model, tmp_path, capsys):
    """Before: a second train into a finished folder cut metrics.jsonl to the new run's rows and
    left the old run's checkpoints beside the new ones, and every checkpoint stayed on disk."""
    pytest.importorskip("trl")
    from rlvr_gym.backends.metrics import read_metrics

    out = tmp_path / "run"
    assert main(cli_train(warm_arith_model, out, "--max-steps", "5", "--keep-checkpoints", "2")) == 0
    assert checkpoints(out) == [4, 5], "only the last 2 checkpoints stay"
    unnamed = [p.name for p in out.iterdir() if not written_by_a_run(p.name) and p.name != MODEL_CARD_FILE]
    assert not unnamed, f"the run wrote {unnamed}, which backends/run_layout.py does not name"
    assert (out / "final" / "model.safetensors").is_file() and len(read_metrics(out)) == 5

    capsys.readouterr()
    assert main(cli_train(warm_arith_model, out, "--max-steps", "2")) == 2
    assert "holds a finished run" in capsys.readouterr().err
    assert len(read_metrics(out)) == 5 and checkpoints(out) == [4, 5], "the refused run touched the old one"

    assert main(cli_train(warm_arith_model, out, "--max-steps", "2", "--overwrite")) == 0
    assert checkpoints(out) == [1, 2], "checkpoints of the old run survived --overwrite"
    assert [r["step"] for r in read_metrics(out)] == [1, 2]

    capsys.readouterr()
    assert main(cli_train(warm_arith_model, out, "--max-steps", "3", "--resume")) == 0
    assert "resuming from checkpoint-2" in capsys.readouterr().out
    assert [r["step"] for r in read_metrics(out)] == [1, 2, 3] and checkpoints(out) == [2, 3]


def test_overwrite_removes_every_file_a_finished_run_wrote(tmp_path, capsys):
    """Before: run_dir kept its own list of what a run writes, without the optimizer record
    backends/trl.py leaves at the end of every run, so --overwrite left the old run's behind."""
    folder = fake_run(tmp_path / "run", checkpoints=(5,), final=True, metrics=5)
    (folder / OPTIMIZER_FILE).write_text("{}")
    run_dir.prepare(folder, resume=False, overwrite=True, max_steps=5)
    assert sorted(p.name for p in folder.iterdir()) == []
    assert OPTIMIZER_FILE in capsys.readouterr().out


def test_an_eval_before_training_leaves_the_folder_fresh(tmp_path):
    """examples/eval_before_after.py evaluates the base model into RUN_DIR/eval-before first."""
    from rlvr_gym.backends.run_layout import EVAL_SETTINGS_FILE as SETTINGS_FILE

    (tmp_path / "run" / "eval-before").mkdir(parents=True)
    (tmp_path / "run" / "eval-before" / SETTINGS_FILE).write_text("{}")
    assert run_dir.inspect(tmp_path / "run").state == "fresh"
    (tmp_path / "run" / "tiny-model").mkdir()  # the example builds its base model there too
    assert run_dir.inspect(tmp_path / "run").state == "fresh"
    (tmp_path / "run" / "notes.txt").write_text("mine")
    assert run_dir.inspect(tmp_path / "run").state == "foreign"


def test_overwrite_removes_only_what_a_run_wrote_and_says_so(tmp_path, capsys):
    """Before: --overwrite deleted the whole folder (evals, report, a user's notes) without a word."""
    folder = fake_run(tmp_path / "run", checkpoints=(5, 10), final=True, metrics=10)
    for name in ("audit.json", "rollouts.jsonl", "reward_curve.png", "trainer_state.json", "report.html"):
        (folder / name).write_text("{}")
    (folder / "eval-final").mkdir()
    (folder / "eval-final" / "eval_settings.json").write_text("{}")
    (folder / "plots").mkdir()
    (folder / "notes.txt").write_text("mine")
    run_dir.prepare(folder, resume=False, overwrite=True, max_steps=10)
    assert sorted(p.name for p in folder.iterdir()) == ["eval-final", "notes.txt", "plots", "report.html"]
    assert (folder / "notes.txt").read_text() == "mine"
    out = capsys.readouterr().out
    assert "removed audit.json, checkpoint-10/, checkpoint-5/, config.json, final/, metrics.jsonl" in out
    assert "kept eval-final/, notes.txt, plots/, report.html" in out
    # train writes its config.json next; what stayed does not make a refused start's folder "stopped"
    RunConfig(output_dir=str(folder)).save(folder / "config.json")
    (folder / "audit.json").write_text("{}")
    assert run_dir.inspect(folder).state == "fresh"
