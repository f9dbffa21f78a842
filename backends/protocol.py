"""What a backend is: a name, whether it can run here, and how it trains an env.

Each backend module (``trl``, ``deepspeed_zero2``, ``fsdp_vllm``) satisfies :class:`Backend`
structurally — the module itself is the backend object. ``available`` takes the same keyword
options as ``train`` so a caller checks exactly the run it is about to start (``fsdp-vllm``'s
``mode="colocate"`` needs other things than server mode).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rlvr_gym.backends.config import RunConfig
    from rlvr_gym.envs import SingleTurnEnv


@dataclass
class RunResult:
    """What a finished run left behind."""

    output_dir: Path
    model_dir: Path
    steps: int
    metrics: list[dict[str, Any]] = field(default_factory=list)
    plot: Path | None = None


@runtime_checkable
class Backend(Protocol):
    """A GRPO engine adapter. ``NAME`` is what ``--backend`` and ``backends.get`` accept."""

    NAME: str

    def available(self, **options: Any) -> tuple[bool, str]:
        """``(True, what runs)`` or ``(False, exactly what is missing)``; never raises."""
        ...

    def train(
        self,
        env: SingleTurnEnv,
        config: RunConfig,
        *,
        model: str | Path,
        resume: bool = False,
        **options: Any,
    ) -> RunResult:
        """Run GRPO on ``env`` from ``model`` as ``config`` says; ``options`` are backend-specific."""
        ...
