"""The command line as a new user first meets it: pipes, typos, missing extras, default folders,
and the pages that say how to start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rlvr_gym as rg
from rlvr_gym.trainers.cli import main
from rlvr_gym.trainers.run_dir import default_eval_dir

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "rlvr_gym.trainers.cli"]


def test_envs_into_a_closed_pipe_is_quiet():
    """Before: `rlvr-gym envs | head` ended in `rlvr-gym: error: [Errno 32] Broken pipe`, exit 2."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line, as `head` is after its lines
    with os.fdopen(write, "wb") as stdout:
        done = subprocess.run([*CLI, "envs"], stdout=stdout, stderr=subprocess.PIPE, timeout=120)
    assert done.stderr.decode() == "" and done.returncode == 0


def test_envs_takes_a_filter(capsys):
    assert main(["envs", "humaneval"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [
        "humaneval-feedback-v0",
        "humaneval-v0",
    ]
    assert main(["envs", "reasoning_gym/*"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 106
    assert main(["envs", "*-python-v0"]) == 0
    assert {line.split()[0] for line in capsys.readouterr().out.splitlines()} == {
        "gsm8k-python-v0",
        "math500-python-v0",
    }
    assert main(["envs", "zzz-no-such"]) == 2
    assert "no registered env matches 'zzz-no-such'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("--lr", "--learning-rate"), ("--max-step", "--max-steps"), ("--num-generation", "--num-generations")],
)
def test_an_unknown_or_abbreviated_flag_is_refused_with_the_flag_meant(typed, meant, capsys):
    """Before: `--lr` was refused naming nothing; `--max-step` was taken silently as `--max-steps`."""
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--env", "arith", typed, "1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {typed} 1" in err and f"did you mean {meant}" in err
    assert "usage: rlvr-gym train" in err  # the subcommand's usage, not the top level's


def test_a_model_path_under_a_local_folder_is_not_sent_to_the_hub(tmp_path, capsys, monkeypatch):
    """Before: `--model runs/typo` said the Hugging Face hub was unreachable."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "arith").mkdir(parents=True)
    assert main(["eval", "--model", "runs/arth", "--env", "arith"]) == 2
    err = capsys.readouterr().err
    assert "no such folder" in err and "did you mean runs/arith" in err and "hub" not in err


def test_the_default_eval_folder_is_one_per_model(tmp_path):
    """Before: every model outside a run folder shared runs/eval-ENV, so a second one was refused."""
    for name in ("a", "b"):
        (tmp_path / name / "tiny").mkdir(parents=True)
    folders = {
        default_eval_dir(tmp_path / "a" / "tiny", "arith"),
        default_eval_dir(tmp_path / "b" / "tiny", "arith"),
        default_eval_dir("Qwen/Qwen2.5-0.5B", "arith"),
        default_eval_dir("Qwen/Qwen2.5-1.5B", "arith"),
    }
    assert len(folders) == 4 and all(f.startswith("runs/eval-arith-") for f in folders)
    assert "runs/eval-arith-Qwen_Qwen2.5-0.5B" in folders
    assert (
        default_eval_dir("m", "reasoning_gym/basic_arithmetic")
        == "runs/eval-reasoning_gym_basic_arithmetic-m"
    )


def test_the_catalogue_lists_every_env_and_the_landing_page_says_how_to_start():
    catalogue = (ROOT / "docs" / "catalogue.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([^`]+)`", catalogue, flags=re.M))
    own = {  # the package's own (a test or an example may have registered one of its own here)
        i
        for i, spec in rg.envs.registry.items()
        if not i.startswith("reasoning_gym/") and str(spec.entry_point).startswith("rlvr_gym.")
    }
    assert own <= listed, f"not in the catalogue: {sorted(own - listed)}"
    table = catalogue[catalogue.index("| id |") :].split("\n\n", 1)[0].splitlines()
    assert max(len(row) for row in table) < 180, "a table row this wide overflows the page"
    landing = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "pip install -q -e '.[trl]'" in landing and "## Quickstart" in landing
    assert "rlvr-gym train --env arith" in landing


def test_without_the_reasoning_gym_extra_its_envs_say_how_to_install_it():
    """Before: `make("reasoning_gym/...")` said "no env registered" and `envs` dropped 106 ids."""
    script = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name.split('.')[0] == 'reasoning_gym' else real(name, *a)\n"
        "sys.modules['reasoning_gym'] = None  # import reasoning_gym raises ImportError\n"
        "import rlvr_gym as rg\n"
        "lines = [i for i in rg.envs.registry if i.startswith('reasoning_gym/')]\n"
        "print(len(lines), rg.envs.spec('reasoning_gym/basic_arithmetic').summary())\n"
        "try:\n"
        "    rg.make('reasoning_gym/basic_arithmetic')\n"
        "except rg.Error as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    listed, error = done.stdout.splitlines()
    assert listed.startswith("106 ") and "pip install 'rlvr-gym[reasoning-gym]'" in listed
    assert "pip install 'rlvr-gym[reasoning-gym]'" in error


@pytest.mark.slow
def test_a_missing_tracker_is_refused_before_any_model_is_built(tmp_path, capsys):
    """Before: `--report-to wandb` was refused after the tiny model was built and warm-started."""
    out = tmp_path / "run"
    code = main(
        ["train", "--env", "arith", "--report-to", "wandb", "--output-dir", str(out), "--max-steps", "1"]
    )
    assert code == 2
    assert "pip install 'rlvr-gym[wandb]'" in capsys.readouterr().err
    assert not (out / "tiny-model").exists() and not (out / "warm-start").exists()
