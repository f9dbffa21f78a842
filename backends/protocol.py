"""What a backend is: a name, whether it can run here, and how it trains an env.

Each backend module (``trl``, ``deepspeed_zero2``, ``fsdp_vllm``) satisfies :class:`Backend`
structurally — the module itself is the backend object. ``available`` takes the same keyword
options as ``train`` so a caller checks exactly the run it is about to start (``fsdp-vllm``'s
``mode="colocate"`` needs other things than server mode).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rlvr_gym.backends.run_layout import FINAL_DIR, PLOT_FILE, TRAINER_STATE

if TYPE_CHECKING:
    from rlvr_gym.backends.config import RunConfig
    from rlvr_gym.envs import Env


@dataclass
class RunResult:
    """What a finished run left behind."""

    output_dir: Path
    model_dir: Path
    steps: int
    metrics: list[dict[str, Any]] = field(default_factory=list)
    plot: Path | None = None


def steps_done(folder: str | Path) -> int | None:
    """The optimizer steps a finished run folder or a complete ``checkpoint-N`` holds.

    The one place a step count is read: transformers' ``trainer_state.json`` (``global_step``),
    the last file the Trainer writes into a checkpoint and the one :func:`write_trainer_state`
    leaves in a finished run's folder. ``None`` when the folder has none (a run cut short).
    """
    path = Path(folder) / TRAINER_STATE
    try:
        return int(json.loads(path.read_text())["global_step"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def write_trainer_state(state: Any, output_dir: str | Path) -> None:
    """Leave a finished run's ``TrainerState`` in its folder, atomically (every machine's local
    rank 0 may write the same content to a shared folder)."""
    path = Path(output_dir) / TRAINER_STATE
    tmp = path.with_name(f".{TRAINER_STATE}.{os.getpid()}")
    state.save_to_json(str(tmp))
    os.replace(tmp, path)


def run_result(output_dir: str | Path) -> RunResult:
    """What a finished run left in ``output_dir``: every backend builds its result here."""
    from rlvr_gym.backends.metrics import read_metrics
    from rlvr_gym.error import MissingPathError

    output_dir = Path(output_dir)
    steps = steps_done(output_dir)
    if steps is None:
        raise MissingPathError(f"no {TRAINER_STATE} in {output_dir}: the run did not finish there")
    plot = output_dir / PLOT_FILE
    return RunResult(
        output_dir, output_dir / FINAL_DIR, steps, read_metrics(output_dir), plot if plot.is_file() else None
    )


@runtime_checkable
class Backend(Protocol):
    """A GRPO engine adapter. ``NAME`` is what ``--backend`` and ``backends.get`` accept."""

    NAME: str
    Options: type  # a dataclass: the keyword options ``available`` and ``train`` take

    def available(self, **options: Any) -> tuple[bool, str]:
        """``(True, what runs)`` or ``(False, exactly what is missing)``; never raises."""
        ...

    def train(
        self,
        env: Env,
        config: RunConfig,
        *,
        model: str | Path,
        resume: bool = False,
        **options: Any,
    ) -> RunResult:
        """Run GRPO on ``env`` from ``model`` as ``config`` says; ``options`` are backend-specific."""
        ...
