"""``make_vec``: a batch of envs through Gymnasium's own vector envs (sync or async workers)."""

from __future__ import annotations

from typing import Any, Literal

import gymnasium

from rlvr_gym.envs.registration import gymnasium_id, spec
from rlvr_gym.error import InvalidArgumentError


def make_vec(
    id: str,  # noqa: A002 - the Gymnasium name for it
    num_envs: int,
    *,
    vectorization_mode: Literal["sync", "async"] = "sync",
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> gymnasium.vector.VectorEnv:
    """``num_envs`` copies of env ``id`` (latest version if unversioned) as one vector env.

    ``"async"`` steps each copy in its own process (the env is rebuilt there from its spec).
    Observations are text, which shared memory cannot hold, so ``shared_memory`` defaults off.
    Batched observations and actions are tuples of ``num_envs`` items.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise InvalidArgumentError(f"num_envs must be an int >= 1, got {num_envs!r}")
    if vectorization_mode not in ("sync", "async"):
        raise InvalidArgumentError(f"vectorization_mode must be 'sync' or 'async', got {vectorization_mode!r}")
    resolved = spec(id)
    options = dict(vector_kwargs or {})
    if vectorization_mode == "async":
        options.setdefault("shared_memory", False)
    return gymnasium.make_vec(
        gymnasium_id(resolved.id),
        num_envs=num_envs,
        vectorization_mode=vectorization_mode,
        vector_kwargs=options,
        **env_kwargs,
    )
