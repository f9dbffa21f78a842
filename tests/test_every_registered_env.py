"""One invariant across the whole registry: every env keeps the SingleTurnEnv contract."""

import pytest

from rlvr_gym import envs


@pytest.mark.parametrize("env_id", sorted(envs.registry))
def test_every_registered_env_passes_check_env(env_id):
    env = envs.make(env_id)
    assert envs.check_env(env, n_tasks=4) == list(envs.CHECK_NAMES)


@pytest.mark.parametrize("env_id", sorted(envs.registry))
def test_every_registered_env_has_a_description(env_id):
    assert envs.spec(env_id).summary()
