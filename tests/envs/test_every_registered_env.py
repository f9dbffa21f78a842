"""One invariant across the whole registry: every env keeps the env contract (check_env's rules)."""

import pytest

from rlvr_gym import envs
from tests.support.registered import ids, make_or_skip

# tests/support/hackable_envs.py registers deliberately weak verifiers (``hack/*``) for the audit's tests:
# by design their wrong answers score 1.0, so the oracle checks must fail for them.
SOUND = ids(hackable=False)
# Known, measured gaps (each named where it is listed): the rule check_env stops at.
KNOWN_GAPS: dict[str, str] = {}


@pytest.mark.parametrize("env_id", SOUND)
def test_every_registered_env_passes_check_env(env_id):
    env = make_or_skip(env_id)
    if env_id in KNOWN_GAPS:  # fails exactly there, and this test says when that is fixed
        with pytest.raises(envs.EnvCheckError, match=KNOWN_GAPS[env_id]):
            envs.check_env(env, n_tasks=4)
        return
    assert envs.check_env(env, n_tasks=4) == list(envs.CHECK_NAMES)


@pytest.mark.parametrize("env_id", sorted(envs.registry))
def test_every_registered_env_has_a_description(env_id):
    assert envs.spec(env_id).summary()
