"""Gymnasium's own contract: its checker, fresh data per call, pickling, vector envs, its registry."""

import copy
import pickle
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

import rlvr_gym as rg
from rlvr_gym import envs
from rlvr_gym.verifiers import Reason, Rubric, Verdict
from tests.support.registered import ids, make_or_skip

ALL_IDS = ids()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_gymnasium_check_env_passes_with_every_warning_an_error(env_id):
    env = make_or_skip(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing filtered: any checker warning fails the test
        gymnasium_check_env(env)
    env.close()


def _scramble(value):
    """Mutate everything mutable inside ``value`` in place."""
    if isinstance(value, dict):
        for key in list(value):
            if isinstance(value[key], dict | list):
                _scramble(value[key])
            else:
                value[key] = "999"
        value["injected"] = "999"
    elif isinstance(value, list):
        for item in value:
            _scramble(item)
        value.append({"role": "user", "content": "999"})


@pytest.mark.parametrize("env_id", ["arith", "gsm8k", "mbpp-sample"])
def test_mutating_returned_obs_and_info_changes_no_later_verdict(env_id):
    env = envs.make(env_id)
    obs, info = env.reset(options={"index": 3})
    reference = env.reference_completion(info["task"])
    baseline = env.verify(reference, env.tasks(env.splits[0])[3])
    _scramble(obs)
    _scramble(info)
    _, reward, _, _, step_info = env.step(reference)
    assert reward == baseline.score == 1.0
    _scramble(step_info["task"])
    _, info = env.reset(options={"index": 3})
    assert info["task"] == copy.deepcopy(info["task"]) and "injected" not in info["task"]
    _, reward, *_ = env.step("<answer>999</answer>")
    assert reward < 1.0  # "999" was never written into the answer key
    with pytest.raises(TypeError, match="read-only"):
        env.tasks(env.splits[0])[3]["answer"] = "999"  # the env's own rows refuse edits
    env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_every_env_round_trips_through_pickle_and_scores_alike(env_id):
    env = make_or_skip(env_id)
    _, info = env.reset(seed=1)
    copied = pickle.loads(pickle.dumps(env))
    reference = env.reference_completion(info["task"])
    assert copied.spec == env.spec and copied.verify(reference, info["task"]) == env.verify(
        reference, info["task"]
    )
    if isinstance(env.rubric, Rubric):  # any verifier may be the rubric (humaneval-feedback's is bare)
        assert pickle.loads(pickle.dumps(env.rubric)).weights == env.rubric.weights
    copied.close()
    env.close()


@pytest.mark.parametrize("reason", list(Reason))
def test_a_verdict_of_each_reason_pickles_and_deep_copies_and_stays_immutable(reason):
    verdict = (
        Verdict.correct("7", scores={"a": 1.0}, failures=["x"])
        if reason is Reason.CORRECT
        else Verdict.fail(reason, "7", score=0.25, scores={"a": 0.25}, failures=["x"])
    )
    for clone in (pickle.loads(pickle.dumps(verdict)), copy.deepcopy(verdict), copy.copy(verdict)):
        assert clone == verdict and clone.reason is reason and clone.details == verdict.details
    with pytest.raises(TypeError):
        verdict.details["scores"]["a"] = 0.0
    with pytest.raises(TypeError):
        verdict.details["new"] = 1
    with pytest.raises((AttributeError, TypeError)):  # frozen (slots dataclasses raise TypeError on 3.11)
        verdict.score = 1.0  # type: ignore[misc]
    assert verdict.to_dict()["details"] == {"scores": {"a": verdict.score}, "failures": ["x"]}


def test_rubric_round_trips_through_pickle():
    rubric = envs.make("gsm8k").rubric
    assert isinstance(rubric, Rubric)
    clone = pickle.loads(pickle.dumps(rubric))
    completion, task = "<think>1+1</think><answer>2</answer>", {"answer": "2"}
    assert clone(completion, task) == rubric(completion, task)


@pytest.mark.parametrize("env_id", ["arith", "gsm8k"])
def test_async_vector_env_of_two_workers_steps_a_builtin_env(env_id):
    vector = gymnasium.vector.AsyncVectorEnv([lambda: rg.make(env_id)] * 2, shared_memory=False)
    try:
        obs, info = vector.reset(seed=[0, 1], options={"index": 5})
        assert len(obs) == 2 and list(info["index"]) == [5, 5]
        env = rg.make(env_id)
        references = tuple(env.reference_completion(task) for task in _rows(info["task"]))
        _, rewards, terminated, truncated, info = vector.step(references)
        assert rewards.tolist() == [1.0, 1.0] and terminated.all() and not truncated.any()
        assert all(isinstance(v, Verdict) and v.passed for v in info["verdict"])
    finally:
        vector.close()


def test_registered_in_gymnasium_under_a_namespace_with_versions():
    env = gymnasium.make("rlvr_gym/gsm8k-v0")
    assert env.spec.id == "rlvr_gym/gsm8k-v0" and isinstance(env.unwrapped, envs.SingleTurnEnv)
    assert rg.make("gsm8k").spec.id == "gsm8k-v0"  # no version: the latest, and the spec names it
    assert envs.gymnasium_id("gsm8k-v0") == "rlvr_gym/gsm8k-v0"
    assert envs.gymnasium_id("acme/echo-v1") == "acme/echo-v1"
    envs.register("scratchver-v0", "rlvr_gym.envs.arith:ArithEnv", num_steps=1)
    envs.register("scratchver-v2", "rlvr_gym.envs.arith:ArithEnv", num_steps=3)
    try:
        assert envs.spec("scratchver").id == "scratchver-v2"
        with pytest.warns(DeprecationWarning, match="out of date"):  # Gymnasium sees the versions too
            assert gymnasium.make("rlvr_gym/scratchver-v0").unwrapped.params["num_steps"] == 1
        with pytest.raises(envs.DuplicateEnvError, match="versions"):
            envs.register("scratchver", "rlvr_gym.envs.arith:ArithEnv")
    finally:
        envs.deregister("scratchver-v0")
        envs.deregister("scratchver-v2")
    assert "rlvr_gym/scratchver-v0" not in gymnasium.registry


def test_make_vec_batches_reset_and_step():
    vector = rg.envs.make_vec("arith", 3)
    try:
        obs, info = vector.reset(seed=0)
        answers = tuple(f"<answer>{task['answer']}</answer>" for task in _rows(info["task"]))
        _, rewards, *_ = vector.step(answers)
        assert len(obs) == 3 and rewards.tolist() == [1.0, 1.0, 1.0]
    finally:
        vector.close()


def _rows(batched):
    """Gymnasium batches dict infos key by key; turn them back into one dict per env."""
    return [dict(zip(batched, values, strict=True)) for values in zip(*batched.values(), strict=True)]


def test_one_make_one_id_a_gymnasium_made_env_is_checked_and_audited():
    """``gymnasium.make`` and ``rlvr_gym.make`` give envs with one id, and the checker and the
    audit take the env inside Gymnasium's wrappers (Gymnasium's own checker still passes); the
    TRL helpers: tests/backends/test_trl_adapter.py."""
    from rlvr_gym.envs.audit import audit

    wrapped, ours = gymnasium.make("rlvr_gym/arith-v0"), rg.make("arith-v0")
    assert isinstance(wrapped, gymnasium.Wrapper) and wrapped.spec.id == "rlvr_gym/arith-v0"
    assert wrapped.unwrapped.id == ours.id == rg.make("rlvr_gym/arith-v0").id == "arith-v0"
    assert rg.make("rlvr_gym/arith").spec.id == "arith-v0"  # Gymnasium's id is ours under both makes
    gymnasium_check_env(wrapped.unwrapped, skip_render_check=True)
    assert envs.check_env(wrapped, n_tasks=2) == envs.check_env(ours, n_tasks=2)
    report = audit(wrapped, n_tasks=2, fast=True, families=["echo", "hedging"])
    assert report.env == "arith-v0" and report.ok
    with pytest.raises(envs.InvalidEnvIdError, match="register 'scratch-v0'"):
        envs.register("rlvr_gym/scratch-v0", "rlvr_gym.envs.arith:ArithEnv")
