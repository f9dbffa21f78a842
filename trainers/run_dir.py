"""Run folders: what a folder holds before ``train`` writes into it, and what a later command may do.

A training run owns its folder (``config.json``, ``metrics.jsonl``, ``checkpoint-N/``,
``final/`` ...). Starting a new run in a folder that holds another one would mix the two: the
old checkpoints stay beside the new ones and a later ``--resume`` picks the wrong one. So the
folder is classified first, before any model is built or loaded:

- ``fresh``: missing, empty, holding only evals (an "eval before training" in ``RUN_DIR/eval-before``),
  or left by a start that failed before its first logged step (only ``config.json``/``audit.json``
  and the tiny/warm-start models) — a new run may start;
- ``resumable``: a run with a complete ``checkpoint-N`` and no ``final/`` (killed or stopped);
- ``finished``: a run with ``final/``;
- ``stopped``: a run that logged steps but has neither a checkpoint nor ``final/``;
- ``foreign``: anything else (no rlvr-gym ``config.json``: an eval folder, a home folder...).

``--overwrite`` removes what a run wrote there (never from a foreign folder) before the new run
starts, and says what it removed and what it kept: evals, the report and a user's own files stay;
``--resume`` needs a checkpoint and says which one it continues from, or a finished warm start
(a run killed before its first checkpoint: GRPO starts again from the warm start).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rlvr_gym.backends.console import announce
from rlvr_gym.backends.protocol import steps_done
from rlvr_gym.backends.run_layout import (
    CHECKPOINT_PREFIX,
    CONFIG_FILE,
    EVAL_PREFIX,
    EVAL_SETTINGS_FILE,
    FINAL_DIR,
    LEFT_BY_A_FAILED_START,
    METRICS_FILE,
    WARM_START_DIR,
    WARM_START_DONE_FILE,
    eval_dir_name,
    written_by_a_run,
)
from rlvr_gym.backends.trl import last_checkpoint
from rlvr_gym.error import (
    InvalidArgumentError,
    MissingPathError,
    RunFolderInUseError,  # noqa: F401 - defined with the whole tree
)

RUN_KEYS = frozenset({"env_id", "max_steps", "num_generations", "output_dir"})
"""Keys every saved ``RunConfig`` has: a ``config.json`` with them is a run's, not a model's."""


State = Literal["fresh", "resumable", "finished", "stopped", "foreign"]


@dataclass(frozen=True)
class RunFolder:
    """A folder's state and, for a run, its checkpoint to resume from and its saved config."""

    path: Path
    state: State
    checkpoint: Path | None
    config: dict[str, Any] | None

    @property
    def checkpoint_step(self) -> int | None:
        return None if self.checkpoint is None else steps_done(self.checkpoint)


def read_run_config(folder: Path) -> dict[str, Any] | None:
    """The ``RunConfig`` dict a run saved in ``folder``, or ``None`` when there is none."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.keys() >= RUN_KEYS else None


def _logged_rows(folder: Path) -> int:
    path = folder / METRICS_FILE
    if not path.is_file():
        return 0
    return sum(1 for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip())


def inspect(folder: str | Path) -> RunFolder:
    """Classify ``folder`` (see the module docs); reads only small files, loads no model."""
    path = Path(folder)
    if not path.exists():
        return RunFolder(path, "fresh", None, None)
    if not path.is_dir():
        return RunFolder(path, "foreign", None, None)
    entries = {p.name for p in path.iterdir()}
    evals = {name for name in entries if (path / name / EVAL_SETTINGS_FILE).is_file()}
    entries -= evals  # an eval of the base model before training belongs beside the run
    if not entries:
        return RunFolder(path, "fresh", None, None)
    config = read_run_config(path)
    if config is None and (CONFIG_FILE in entries or not entries <= LEFT_BY_A_FAILED_START):
        return RunFolder(path, "foreign", None, None)
    checkpoint = last_checkpoint(path)
    if (path / FINAL_DIR).is_dir():
        return RunFolder(path, "finished", checkpoint, config)
    if checkpoint is not None:
        return RunFolder(path, "resumable", checkpoint, config)
    own = {name for name in entries if written_by_a_run(name)}  # a user's notes do not make it a run
    if own <= LEFT_BY_A_FAILED_START and _logged_rows(path) == 0:
        return RunFolder(path, "fresh", None, config)
    return RunFolder(path, "stopped", None, config)


def prepare(folder: str | Path, *, resume: bool, overwrite: bool, max_steps: int) -> RunFolder:
    """Check ``folder`` before a run loads anything; remove it first under ``overwrite``.

    Returns the folder's state (``checkpoint`` set when resuming). Raises
    :class:`RunFolderInUseError` (one line naming the way out) instead of mixing two runs, and
    :class:`~rlvr_gym.error.MissingPathError` when ``resume`` finds nothing to resume.
    """
    if resume and overwrite:
        raise InvalidArgumentError("--resume and --overwrite contradict each other: pick one")
    run = inspect(folder)
    where = str(run.path)
    if run.state == "foreign":
        raise RunFolderInUseError(
            f"{where} is not an rlvr-gym run folder (no run config.json) and is not empty; "
            "choose another --output-dir (--overwrite removes only run folders)"
        )
    if overwrite:
        removed, kept = clear_run(run.path)
        if removed:
            announce(f"--overwrite: removed {', '.join(removed)} from {where}")
        if kept:
            announce(f"--overwrite: kept {', '.join(kept)} (not written by a run)")
        return RunFolder(run.path, "fresh", None, None)
    if resume:
        if run.checkpoint is None and (run.path / WARM_START_DIR / WARM_START_DONE_FILE).is_file():
            announce(
                f"--resume: no checkpoint in {where} yet; GRPO starts again from its finished warm start"
            )
            return run
        if run.checkpoint is None:
            raise MissingPathError(
                f"--resume: no checkpoint-N in {where} ({run.state}); drop --resume to start a new run there"
                if run.state == "fresh"
                else f"--resume: no checkpoint-N in {where} ({run.state}); use --overwrite or another --output-dir"
            )
        step = run.checkpoint_step or 0
        if step >= max_steps:
            raise InvalidArgumentError(
                f"--resume: {where} already reached step {step} (max_steps {max_steps}); "
                "raise --max-steps to train further"
            )
        return run
    if run.state == "fresh":
        return run
    how = {
        "finished": "holds a finished run (final/)",
        "resumable": f"holds a run stopped at {run.checkpoint.name if run.checkpoint else '?'}",
        "stopped": "holds a run that logged steps but left no checkpoint",
    }[run.state]
    options = "--resume to continue it, " if run.state == "resumable" else ""
    raise RunFolderInUseError(f"{where} {how}; use {options}--overwrite to replace it, or another --output-dir")


def clear_run(folder: Path) -> tuple[list[str], list[str]]:
    """Remove what a training run wrote at the top of ``folder`` (:func:`written_by_a_run`);
    return the names removed and the names kept (evals, the report, a user's files)."""
    if not folder.is_dir():
        return [], []
    removed, kept = [], []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if not written_by_a_run(entry.name):
            kept.append(entry.name + ("/" if entry.is_dir() else ""))
            continue
        folder_entry = entry.is_dir() and not entry.is_symlink()
        if folder_entry:
            shutil.rmtree(entry)
        else:
            entry.unlink()
        removed.append(entry.name + ("/" if folder_entry else ""))
    return removed, kept


def run_of_model(model: str | Path) -> tuple[Path, dict[str, Any]] | None:
    """The run folder and saved config behind ``model``: a run folder itself, or its ``final/``
    or ``checkpoint-N`` inside one; ``None`` for any other model reference (a hub id, a model folder)."""
    path = Path(str(model)).expanduser()
    if not path.is_dir():
        return None
    for folder in (path, path.parent):
        config = read_run_config(folder)
        if config is not None and (
            folder == path or path.name == FINAL_DIR or path.name.startswith(CHECKPOINT_PREFIX)
        ):
            return folder, config
    return None


def model_of_run(model: str | Path) -> str | Path:
    """``RUN_DIR/final`` when ``model`` is a run folder, else ``model`` unchanged."""
    found = run_of_model(model)
    if found is not None and found[0] == Path(str(model)).expanduser():
        final = found[0] / FINAL_DIR
        if not final.is_dir():
            raise MissingPathError(f"{model} is a run folder without final/ (the run has not finished)")
        return final
    return model


@dataclass(frozen=True)
class EvalEnv:
    """The env an eval scores: its id and settings, and where they came from (for the console)."""

    env_id: str
    env_kwargs: dict[str, Any]
    note: str | None


def _family(env_id: str) -> tuple[str | None, str]:
    from gymnasium.envs.registration import parse_env_id

    namespace, name, _ = parse_env_id(env_id)
    return namespace, name


def _has_version(env_id: str) -> bool:
    from gymnasium.envs.registration import parse_env_id

    return parse_env_id(env_id)[2] is not None


def eval_env(model: str | Path, env_id: str | None, env_kwargs: dict[str, Any]) -> EvalEnv:
    """The env to evaluate ``model`` on: for a model from a run folder, the run's recorded env id,
    version and settings, with ``env_kwargs`` on top; ``env_id`` naming another env drops them.

    Scoring a trained model on the env's *defaults* instead of what it trained on measures the
    wrong task (the tiny arith demo: 0.0055 on the defaults, 0.60 on its own settings).
    """
    found = run_of_model(model)
    if found is None:
        if env_id is None:
            raise InvalidArgumentError(
                f"--env is required: {model} is not a model inside an rlvr-gym run folder, so no env is recorded"
            )
        return EvalEnv(env_id, dict(env_kwargs), None)
    folder, config = found
    recorded_id = str(config["env_id"])
    recorded = dict(config.get("env_kwargs") or {})
    if ":" in recorded_id:  # an env object built by hand (module:Class): no registered id to make
        if env_id is None:
            raise InvalidArgumentError(
                f"the run in {folder} trained {recorded_id}, an env built in code; pass --env (and --import)"
            )
        return EvalEnv(env_id, dict(env_kwargs), None)
    if env_id is not None and _family(env_id) != _family(recorded_id):
        return EvalEnv(
            env_id,
            dict(env_kwargs),
            f"--env {env_id} is not the run's env {recorded_id}: its settings are not used",
        )
    chosen = env_id if env_id is not None and _has_version(env_id) else recorded_id  # a given version wins
    merged = {**recorded, **env_kwargs}
    shown = json.dumps(merged, sort_keys=True)
    overridden = f"; --env-arg overrides {', '.join(sorted(env_kwargs))}" if env_kwargs else ""
    return EvalEnv(
        chosen,
        merged,
        f"env {chosen} with the run's settings {shown} (from {folder / CONFIG_FILE}{overridden})",
    )


def default_eval_dir(model: str | Path, env_id: str) -> str:
    """``RUN_DIR/eval-final`` (``eval-checkpoint-N``) for a run's model, so the run's report shows
    it; ``runs/eval-ENV-MODEL`` for any other model (one folder per model: a second model's eval
    would be refused in the first one's folder). MODEL is the hub id, or a local folder's name
    and a short hash of its absolute path (two folders may share a name)."""
    found = run_of_model(model)
    if found is not None:
        return str(found[0] / eval_dir_name(Path(str(model)).name))
    text = str(model)
    path = Path(text).expanduser()
    if path.exists():
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
        tag = f"{path.resolve().name}-{digest}"
    else:
        tag = text
    return f"runs/{EVAL_PREFIX}{_slug(env_id)}-{_slug(tag)}"


def _slug(text: str) -> str:
    """A folder-name-safe form of an env id or model name (``/`` and the like become ``_``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "model"
