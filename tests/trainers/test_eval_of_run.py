"""``eval`` of a training run's model scores the env the run trained on: its recorded id,
version and settings (``config.json``), unless overridden, and says so."""

from __future__ import annotations

import json
import shutil

import pytest

from rlvr_gym.backends.config import RunConfig
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.trainers.cli import main
from rlvr_gym.trainers.demo import TINY_DEMO_ENV
from rlvr_gym.trainers.run_dir import eval_env

SETTINGS = TINY_DEMO_ENV["arith"]


@pytest.fixture
def run(tmp_path, warm_arith_model):
    """A run folder whose config.json records arith-v0 with the tiny demo's settings."""
    folder = tmp_path / "runs" / "arith"
    folder.mkdir(parents=True)
    RunConfig(env_id="arith-v0", env_kwargs=SETTINGS, output_dir=str(folder)).save(folder / "config.json")
    shutil.copytree(warm_arith_model, folder / "final")
    return folder


def eval_argv(model, *extra):
    return [
        "eval",
        "--model",
        str(model),
        "--n",
        "1",
        "--limit",
        "3",
        "--temperature",
        "0",
        "--no-progress",
        *extra,
    ]


@pytest.mark.parametrize("given", ["final", "run folder"])
def test_eval_of_a_run_uses_its_recorded_env_settings_and_says_so(run, capsys, given):
    """Before: --env was required and `eval --env arith --model runs/arith/final` scored arith's
    defaults (two-step word problems up to 20), not the a + b the run trained on."""
    model = run / "final" if given == "final" else run
    assert main(eval_argv(model)) == 0
    out = capsys.readouterr().out
    assert f"env arith-v0 with the run's settings {json.dumps(SETTINGS, sort_keys=True)}" in out
    assert f"(from {run / 'config.json'})" in out
    summary = json.loads((run / "eval-final" / "summary.json").read_text())
    assert summary["env"] == "arith-v0" and summary["env_kwargs"] == SETTINGS
    rows = [json.loads(x) for x in (run / "eval-final" / "rollouts.jsonl").read_text().splitlines()]
    assert all("Ava" not in json.dumps(r["prompt"]) for r in rows), "a word problem: the env's defaults"
    assert f"env settings: {json.dumps(SETTINGS, sort_keys=True)}" in out


def test_env_args_override_the_recorded_settings_and_another_env_drops_them(run, capsys, tmp_path):
    assert (
        main(eval_argv(run / "final", "--env-arg", "max_operand=3", "--output-dir", str(tmp_path / "a"))) == 0
    )
    assert "--env-arg overrides max_operand" in capsys.readouterr().out
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["env_kwargs"] == {
        **SETTINGS,
        "max_operand": 3,
    }

    chosen = eval_env(run / "final", "gsm8k", {})
    assert chosen.env_id == "gsm8k" and chosen.env_kwargs == {} and "not the run's env" in chosen.note
    assert eval_env(run / "final", "arith", {}).env_kwargs == SETTINGS  # the same env, any spelling


def test_a_model_outside_a_run_still_needs_env(tmp_path, warm_arith_model, capsys):
    with pytest.raises(InvalidArgumentError, match="--env is required"):
        eval_env(warm_arith_model, None, {})
    assert main(eval_argv(warm_arith_model, "--output-dir", str(tmp_path / "e"))) == 2
    assert "--env is required" in capsys.readouterr().err
