"""Run a function as a model's forward, so the hooks a sharding wrapper put on the model fire.

Why: the memory path and Liger's loss run the decoder (``model.model``) and read the LM head's
weight, never calling the model itself. FSDP2 does its once-per-step work in the root module's
forward hooks — lazy initialisation, gathering the parameters the root unit holds, finishing a
unit whose modules ran only in part (accelerate 1.15 groups a tied model's norm, embedding and
LM head into one unit; the head never runs here). Skipped, torch 2.13 refuses with "FSDP requires
a single root module" when our path is the first forward of a run — as with vLLM generation,
where the training model's first forward is the old-policy log-probs. The same redirection as
Lightning's and TRL's ``_ForwardRedirection``: patch ``forward`` for one call and call the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_as_forward(module: Any, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, called as ``module(*args, **kwargs)`` with ``fn`` standing in for
    ``module.forward``: forward pre- and post-hooks on ``module`` run around it."""
    missing = object()
    original = module.__dict__.get("forward", missing)  # accelerate may have set one on the instance

    def restore() -> None:
        if original is missing:
            module.__dict__.pop("forward", None)
        else:
            module.forward = original

    def forward(*inner_args: Any, **inner_kwargs: Any) -> T:
        restore()  # fn may call the real forward
        return fn(*inner_args, **inner_kwargs)

    module.forward = forward
    try:
        return module(*args, **kwargs)
    finally:
        restore()
