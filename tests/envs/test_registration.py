import pytest
from gymnasium.envs.registration import parse_env_id
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_gym import envs
from rlvr_gym.envs.arith import ArithEnv

_part = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
env_ids = st.builds(
    lambda ns, name, version: f"{ns + '/' if ns else ''}{name}{'' if version is None else f'-v{version}'}",
    st.none() | _part,
    _part,
    st.none() | st.integers(0, 99),
).filter(lambda i: parse_env_id(i)[:2] not in {parse_env_id(other)[:2] for other in envs.registry})


@pytest.fixture
def scratch_ids():
    added: list[str] = []
    yield added
    for env_id in added:
        if env_id in envs.registry:
            envs.deregister(env_id)


@settings(max_examples=40)
@given(env_id=env_ids, max_operand=st.integers(1, 1000))
def test_register_spec_make_round_trip(env_id, max_operand):
    try:
        registered = envs.register(env_id, ArithEnv, max_operand=max_operand, description="scratch")
        assert envs.spec(env_id) is registered and envs.registry[env_id] is registered
        assert registered.id == env_id and registered.summary() == "scratch"
        env = envs.make(env_id, num_steps=3)
        assert isinstance(env, ArithEnv) and env.spec.id == env_id
        assert env.spec.kwargs == {"max_operand": max_operand, "num_steps": 3}
        assert env.params["max_operand"] == max_operand and env.params["num_steps"] == 3
        with pytest.raises(envs.DuplicateEnvError, match="already registered"):
            envs.register(env_id, ArithEnv)
    finally:
        envs.deregister(env_id)
    assert env_id not in envs.registry


def test_lazy_string_entry_point_imports_on_make(scratch_ids):
    envs.register("lazy-arith-v0", "rlvr_gym.envs.arith:ArithEnv", num_steps=1)
    scratch_ids.append("lazy-arith-v0")
    assert envs.make("lazy-arith-v0").params["num_steps"] == 1
    assert envs.spec("lazy-arith-v0").summary().startswith("Integer arithmetic")


def _unregistered(env_id: str) -> bool:
    """Neither a registered id nor one that names it (``math500`` means ``math500-v0``)."""
    try:
        envs.spec(env_id)
    except envs.RegistryError:
        return True
    return False


@settings(max_examples=30)
@given(st.text(min_size=1, max_size=12).filter(_unregistered))
def test_unknown_ids_fail_with_a_registry_error(env_id):
    with pytest.raises(envs.RegistryError):
        envs.make(env_id)


def test_unknown_id_names_the_closest_ids():
    with pytest.raises(envs.UnknownEnvError, match=r"Did you mean 'arith'\?"):
        envs.make("arihh")


@pytest.mark.parametrize("bad_id", ["", "has space", "a/b/c", "bang!", "tab\tid", 7])
def test_malformed_ids_are_rejected_with_the_rule(bad_id, scratch_ids):
    with pytest.raises(envs.InvalidEnvIdError):
        envs.register(bad_id, ArithEnv)


def test_bad_kwargs_name_the_parameter():
    with pytest.raises(envs.EnvArgumentError, match=r"'max_operan'.*did you mean 'max_operand'"):
        envs.make("arith", max_operan=3)
    with pytest.raises(envs.EnvArgumentError, match="'zzz'"):
        envs.make("arith", zzz=1)
    with pytest.raises(ValueError, match="max_operand"):
        envs.make("arith", max_operand=0)
    with pytest.raises(ValueError, match="prompt_format"):
        envs.make("arith", prompt_format="html")


def test_bad_registration_defaults_fail_at_register_time(scratch_ids):
    with pytest.raises(envs.EnvArgumentError, match="'colour'"):
        envs.register("bad-defaults-v0", ArithEnv, colour="red")
    assert "bad-defaults-v0" not in envs.registry


def test_entry_point_errors_are_registry_errors(scratch_ids):
    envs.register("missing-module-v0", "no_such_module_xyz:Env")
    scratch_ids.append("missing-module-v0")
    with pytest.raises(envs.RegistryError, match="cannot load entry point"):
        envs.make("missing-module-v0")
    envs.register("not-an-env-v0", lambda: "hello")
    scratch_ids.append("not-an-env-v0")
    with pytest.raises(envs.RegistryError, match="not an rlvr_gym.envs.Env"):
        envs.make("not-an-env-v0")
    with pytest.raises(envs.RegistryError, match="module:attr"):
        envs.register("no-colon-v0", "envs.arith.ArithEnv")


def test_registry_is_read_only():
    with pytest.raises(TypeError):
        envs.registry["x"] = None  # type: ignore[index]
