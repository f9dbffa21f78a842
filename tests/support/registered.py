"""The registry as the registry-wide tests see it.

The reasoning-gym bridge's 106 envs are left to ``tests/envs/test_reasoning_gym_bridge.py`` (one slow
loop over all of them); an env whose data set is not on this machine (``mbpp-v0`` offline) is
skipped with the reason, not counted as passing.
"""

from __future__ import annotations

import pytest

from rlvr_gym import envs
from rlvr_gym.envs.data import DataUnavailableError
from rlvr_gym.envs.reasoning_gym_bridge import NAMESPACE
from rlvr_gym.error import NotAvailableError

BRIDGED = f"{NAMESPACE}/"


def ids(*, hackable: bool = True) -> list[str]:
    """Registered ids the registry-wide tests parametrize over."""
    return sorted(
        i for i in envs.registry if not i.startswith(BRIDGED) and (hackable or not i.startswith("hack/"))
    )


def make_or_skip(env_id: str) -> envs.Env:
    """``envs.make(env_id)`` with its first split loaded; skips the test when the data or an extra
    it needs is not here."""
    try:
        env = envs.make(env_id)
    except NotAvailableError as exc:  # an extra the env needs is not installed
        pytest.skip(f"{env_id}: {exc}")
    try:
        env.tasks(env.splits[0])
    except DataUnavailableError as exc:
        env.close()
        pytest.skip(f"{env_id}: {exc}")
    return env
