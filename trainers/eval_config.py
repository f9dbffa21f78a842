"""``EvalConfig``: one eval's settings, the one source of their names, types, defaults and help.

``evaluate(env, model, EvalConfig(...))`` runs it, and ``rlvr-gym eval``'s flags are made from
these fields (:mod:`rlvr_gym.trainers.flags`), as ``train``'s are from
:class:`~rlvr_gym.backends.config.RunConfig`. ``--scoring`` and ``--ray-address`` are
RunConfig's own fields (same help, same default), so train and eval cannot describe them apart.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlvr_gym.backends.config import RunConfig, about
from rlvr_gym.backends.scoring import Scoring, check_scoring
from rlvr_gym.error import InvalidArgumentError

Engine = Literal["auto", "transformers", "vllm", "openai"]


def _run_field(name: str) -> dict[str, Any]:
    """A RunConfig field's default and metadata, for a field eval shares with train."""
    (found,) = (f for f in dataclasses.fields(RunConfig) if f.name == name)
    return {"default": found.default, "metadata": found.metadata}


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class EvalConfig:
    """How to evaluate a model on an env: ``n`` samples per task, pass@``k``, where it goes.

    ``None`` in ``k``, ``split`` and ``output_dir`` means what their help says (``evaluate``
    fills it in from ``n``, the env and the model). ``engine="openai"`` needs a ``sampler``
    (:class:`~rlvr_gym.trainers.openai_engine.OpenAISampler`); ``scoring`` and ``ray_address``
    are as in :class:`~rlvr_gym.backends.config.RunConfig`.
    """

    n: int = field(default=4, metadata=about("samples per task"))
    k: tuple[int, ...] | None = field(
        default=None,
        metadata=about(
            "pass@k to report: --k 1 4 or --k 1 --k 4", type=int, many=True, cli_default="1 and n"
        ),
    )
    split: str | None = field(
        default=None, metadata=about("split to score", cli_default="test when the env has it, else its first")
    )
    limit: int | None = field(default=None, metadata=about("evaluate only the first N tasks", metavar="N"))
    output_dir: str | Path | None = field(
        default=None,
        metadata=about(
            "where rollouts and the summary go; an earlier eval there with the same settings is resumed",
            cli_default="RUN_DIR/eval-final for a run's model, else runs/eval-ENV-MODEL",
        ),
    )
    engine: Engine = field(
        default="auto",
        metadata=about(
            "auto: vLLM on a CUDA GPU where installed, else transformers; "
            "openai: an OpenAI-compatible server at --base-url (pip install 'rlvr-gym[openai]')"
        ),
    )
    max_new_tokens: int = field(default=256, metadata=about("tokens generated per sample at most"))
    temperature: float = field(default=1.0, metadata=about("sampling temperature"))
    seed: int = field(default=0, metadata=about("sampling seed (each task's seed is derived from it)"))
    fresh: bool = field(default=False, metadata=about("discard an earlier eval in --output-dir"))
    progress: bool = field(default=True, metadata=about("a progress line on the console"))
    batch_rollouts: int = field(default=32, metadata=about("completions scored per batch"))
    scoring: Scoring = field(**_run_field("scoring"))
    ray_address: str | None = field(**_run_field("ray_address"))

    def __post_init__(self) -> None:
        _positive_int("n (samples per task)", self.n)
        if self.k is not None:
            k = (
                (self.k,)
                if isinstance(self.k, int)
                else tuple(self.k)
                if isinstance(self.k, Sequence)
                else None
            )
            if not k or any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= self.n for v in k):
                raise InvalidArgumentError(f"k must be integers in [1, n={self.n}], got {self.k!r}")
            object.__setattr__(self, "k", k)
        if self.limit is not None:
            _positive_int("limit", self.limit)
        _positive_int("max_new_tokens", self.max_new_tokens)
        _positive_int("batch_rollouts", self.batch_rollouts)
        if (
            not (isinstance(self.temperature, int | float) and math.isfinite(self.temperature))
            or self.temperature < 0
        ):
            raise InvalidArgumentError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if self.temperature == 0 and self.n > 1:
            raise InvalidArgumentError(
                f"temperature 0 is greedy decoding: its n={self.n} samples per task would all be the same; "
                "use n=1 or a temperature > 0"
            )
        if self.engine not in Engine.__args__:
            raise InvalidArgumentError(f"engine must be one of {Engine.__args__}, got {self.engine!r}")
        check_scoring(self.scoring, self.ray_address)

    @property
    def ks(self) -> list[int]:
        """The pass@k values reported: ``k``, else 1 and ``n``."""
        if self.k is not None:
            return list(self.k)
        return [1, self.n] if self.n > 1 else [1]

    def split_of(self, splits: Sequence[str]) -> str:
        """The split scored: ``split``, else ``test`` where the env has it, else its first."""
        if self.split is not None:
            return self.split
        return "test" if "test" in splits else splits[0]

    @classmethod
    def of(cls, config: EvalConfig | None = None, **settings: Any) -> EvalConfig:
        """``config`` (default: all defaults) with ``settings`` on top; an unknown name is refused
        naming the known ones."""
        if config is not None and not isinstance(config, EvalConfig):
            raise InvalidArgumentError(f"config must be an EvalConfig, got {type(config).__name__}")
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise InvalidArgumentError(f"unknown eval settings {unknown}; EvalConfig has {known}")
        return dataclasses.replace(config, **settings) if config is not None else cls(**settings)
