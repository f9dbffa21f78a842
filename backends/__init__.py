"""Training backends: thin adapters that hand any env to an existing GRPO engine.

The three backends are the modules ``trl``, ``deepspeed_zero2`` and ``fsdp_vllm``; each is a
:class:`~rlvr_gym.backends.protocol.Backend` (``NAME``, ``available(**options)``,
``train(env, config, model=..., resume=..., **options)``). What they share lives beside them:
``config`` (the backend-neutral :class:`RunConfig`), ``metrics`` (the per-step JSONL),
``protocol``; ``planning/`` decides which backend fits (hardware, memory plan, choice) and
``engine/`` holds the engine helpers (memory path, Liger loss, launcher, vLLM server, rewards).
Backend modules are imported only when chosen, so a missing heavy dependency affects only the
backend that needs it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rlvr_gym.backends.config import LoraSettings, RunConfig
from rlvr_gym.backends.protocol import Backend, RunResult
from rlvr_gym.error import InvalidArgumentError

if TYPE_CHECKING:
    from rlvr_gym.backends.planning.hardware import Hardware

BACKENDS = {
    "trl": "rlvr_gym.backends.trl",
    "deepspeed-zero2": "rlvr_gym.backends.deepspeed_zero2",
    "fsdp-vllm": "rlvr_gym.backends.fsdp_vllm",
    # The same module: FSDP2 with generation="vllm" (default) or "transformers" (no vLLM needed).
    "fsdp": "rlvr_gym.backends.fsdp_vllm",
}


def check_extras(config: RunConfig) -> None:
    """Refuse a run whose config needs a package that is missing (a ``--report-to`` tracker,
    Liger for ``liger_loss``), naming the extra: called before any model is built or loaded, so
    a missing extra costs one line, not a model build and a warm start first."""
    from rlvr_gym.backends.trl import check_trackers
    from rlvr_gym.error import NotAvailableError

    check_trackers(config.report_to)
    if config.liger_loss:
        from rlvr_gym.backends.engine import liger

        ok, why = liger.available()
        if not ok:
            raise NotAvailableError(f"--liger-loss: {why}")


def get(name: str) -> Backend:
    """The backend called ``name``; unknown names fail listing the known ones."""
    if name not in BACKENDS:
        raise InvalidArgumentError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)} or 'auto'")
    return cast(Backend, importlib.import_module(BACKENDS[name]))


def options_for(name: str, options: Mapping[str, Any] | Any = None) -> dict[str, Any]:
    """Backend ``name``'s keyword options, checked against its typed ``Options`` dataclass.

    ``options`` is that ``Options`` object (every field) or a dict of some of its fields (the
    rest keep the backend's defaults); an option the backend does not take is refused by name.
    """
    cls = get(name).Options
    names = [f.name for f in dataclasses.fields(cls)]
    if options is None:
        return {}
    if dataclasses.is_dataclass(options) and not isinstance(options, type):
        if not isinstance(options, cls):
            raise InvalidArgumentError(
                f"backend {name!r} takes {cls.__qualname__} options, got {type(options).__name__}"
            )
        return {n: getattr(options, n) for n in names}
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InvalidArgumentError(f"backend {name!r} takes no option {unknown}; its options are {names}")
    return dict(options)


def auto(
    model: str | Path | dict[str, Any] | None = None, hardware: Hardware | None = None, config: Any = None
) -> str:
    """The backend for ``model`` on ``hardware`` (default: this machine), from a memory plan.

    ``model=None`` is the tiny offline model. ``config`` (a :class:`RunConfig`) supplies the batch
    shapes and LoRA; see :mod:`rlvr_gym.backends.planning.choice` for the rules and ``rlvr-gym plan`` for the table.
    """
    from rlvr_gym.backends.planning.choice import choose, workload_for
    from rlvr_gym.backends.planning.hardware import detect
    from rlvr_gym.backends.planning.memory_plan import load_shape

    hardware = hardware or detect()
    # Without a GPU the answer is trl whatever the model; do not require its config to say so.
    shape = load_shape(model) if model is not None and hardware.gpus else None
    return choose(shape, hardware, workload_for(config) if config is not None else None).backend


__all__ = ["BACKENDS", "Backend", "LoraSettings", "RunConfig", "RunResult", "auto", "get", "options_for"]
