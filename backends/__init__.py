"""Training backends: thin adapters that hand any env to an existing GRPO engine.

Each backend module exposes ``NAME``, ``available() -> (ok, reason)`` and
``train(env, config, model=..., resume=...)``. Modules are imported only when chosen, so a
missing heavy dependency affects only the backend that needs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

BACKENDS = {"trl": "backends.trl"}


def get(name: str) -> ModuleType:
    """The backend module called ``name``; unknown names fail listing the known ones."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)} or 'auto'")
    return importlib.import_module(BACKENDS[name])


def auto() -> str:
    """The backend for this machine. Only ``trl`` exists so far; it runs on CPU and on one GPU."""
    return "trl"
