"""Training backends: thin adapters that hand any env to an existing GRPO engine.

Each backend module exposes ``NAME``, ``available() -> (ok, reason)`` and
``train(env, config, model=..., resume=...)``. Modules are imported only when chosen, so a
missing heavy dependency affects only the backend that needs it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from backends.hardware import Hardware

BACKENDS = {
    "trl": "backends.trl",
    "deepspeed-zero2": "backends.deepspeed_zero2",
    "fsdp-vllm": "backends.fsdp_vllm",
}


def get(name: str) -> ModuleType:
    """The backend module called ``name``; unknown names fail listing the known ones."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)} or 'auto'")
    return importlib.import_module(BACKENDS[name])


def auto(
    model: str | Path | dict[str, Any] | None = None, hardware: Hardware | None = None, config: Any = None
) -> str:
    """The backend for ``model`` on ``hardware`` (default: this machine), from a memory plan.

    ``model=None`` is the tiny offline model. ``config`` (a ``GRPOConfig``) supplies the batch
    shapes and LoRA; see :mod:`backends.choice` for the rules and ``rlvr-gym plan`` for the table.
    """
    from backends.choice import choose, workload_for
    from backends.hardware import detect
    from backends.memory_plan import load_shape

    hardware = hardware or detect()
    # Without a GPU the answer is trl whatever the model; do not require its config to say so.
    shape = load_shape(model) if model is not None and hardware.gpus else None
    return choose(shape, hardware, workload_for(config) if config is not None else None).backend
