import pytest

from rlvr_gym import envs
from rlvr_gym.envs import Env, EnvStateError, MultiTurnEnv, SingleTurnEnv
from rlvr_gym.verifiers import ExactMatch, Reason, Rubric, Verdict
from tests.support.doc_blocks import ROOT, named


def _authoring_example() -> type[SingleTurnEnv]:
    """The Capitals env of docs/authoring-envs.md, the very block readers copy (not a copy of it).

    Executed as if written in this module, so the class pickles as ``tests.envs.test_env.Capitals``.
    """
    block = named(ROOT / "docs" / "authoring-envs.md", "capitals-env")
    namespace: dict = {"__name__": __name__}
    exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102 - our own docs
    return namespace["Capitals"]


Capitals = _authoring_example()


def test_a_minimal_authored_env_passes_the_checker():
    assert envs.CHECK_NAMES == (
        "spaces", "reset", "determinism", "step", "episode", "verify_pure", "oracle", "wrong_answers",
        "spec", "instances", "pickle", "close",
    )  # fmt: skip
    # built by hand (no spec): the rules that rebuild the env from its spec are not run
    unrebuilt = [name for name in envs.CHECK_NAMES if name not in ("spec", "instances")]
    assert envs.check_env(Capitals()) == unrebuilt


def test_reset_step_contract_with_chat_and_text_prompts():
    env = Capitals()
    obs, info = env.reset(options={"index": 1})
    assert obs == [
        {"role": "system", "content": "Answer with the city name only."},
        {"role": "user", "content": "What is the capital of Japan?"},
    ]
    assert info == {"split": "train", "index": 1, "task": {"country": "Japan", "capital": "Tokyo"}}
    obs2, reward, terminated, truncated, info = env.step("tokyo")
    assert (reward, terminated, truncated, obs2) == (1.0, True, False, obs)
    assert info["verdict"] == Verdict.correct(
        "tokyo", scores={"correct": 1.0}, reasons={"correct": "correct"}
    )

    text_env = Capitals(prompt_format="text", system_prompt="Be brief.")
    obs, _ = text_env.reset(options={"index": 0})
    assert obs == "Be brief.\n\nWhat is the capital of France?"
    assert text_env.observation_space.contains(obs) and not text_env.observation_space.contains(["x"])


def test_step_out_of_order_raises_a_clear_error():
    env = Capitals()
    with pytest.raises(EnvStateError, match="before reset"):
        env.step("Paris")
    env.reset(seed=3)
    env.step("Paris")
    with pytest.raises(EnvStateError, match="twice"):
        env.step("Paris")
    env.reset(seed=3)
    env.step("Paris")  # a new episode may step again


def test_reset_is_deterministic_in_seed_and_validates_options():
    env = envs.make("arith")
    picks = {env.reset(seed=s)[1]["index"] for s in range(20)}
    assert len(picks) > 10  # the seed really chooses
    assert [env.reset(seed=s)[1]["index"] for s in range(20)] == [
        envs.make("arith").reset(seed=s)[1]["index"] for s in range(20)
    ]
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        env.reset(options={"split": "dev"})
    with pytest.raises(IndexError, match="out of range"):
        env.reset(options={"index": 10_000})
    with pytest.raises(TypeError, match="must be an int"):
        env.reset(options={"index": "3"})
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"idx": 3})


def test_verify_batch_pairs_completions_and_tasks():
    env = envs.make("arith")
    tasks = env.tasks("test")[:4]
    good = [env.reference_completion(t) for t in tasks]
    verdicts = env.verify_batch([good[0], "some working\nbut no answer", good[2], None], tasks)
    assert [v.reason for v in verdicts] == [
        Reason.CORRECT,
        Reason.NO_ANSWER,
        Reason.CORRECT,
        Reason.BAD_FORMAT,
    ]
    with pytest.raises(ValueError, match="3 completions for 4 tasks"):
        env.verify_batch(good[:3], tasks)


def test_a_verifier_bug_is_an_error_verdict_not_a_crash_or_a_silent_zero():
    env = Capitals()
    env.rubric = Rubric({"correct": ExactMatch("no_such_column")})
    _, info = env.reset(options={"index": 0})
    verdict = env.step("Paris")[4]["verdict"]
    assert verdict.reason is Reason.ERROR and "KeyError" in str(verdict.details["errors"])


def test_env_needs_tasks_and_named_splits():
    class Empty(Capitals):
        def load_tasks(self, split):
            return []

    with pytest.raises(ValueError, match="has no tasks"):
        Empty().reset()


def test_every_registered_env_is_an_env_of_exactly_one_turn_protocol():
    """``Env`` is the base of both protocols, and a tool env built on a single-step env's tasks
    and rubric (``gsm8k-python`` on GSM8K's) is not a ``SingleTurnEnv``: code that steps an env
    once can tell them apart with ``isinstance``."""
    assert issubclass(SingleTurnEnv, Env) and issubclass(MultiTurnEnv, Env)
    assert not issubclass(MultiTurnEnv, SingleTurnEnv) and not issubclass(SingleTurnEnv, MultiTurnEnv)
    protocols = {}
    for env_id, spec in envs.registry.items():
        try:
            factory = spec.load()
        except envs.RegistryError:  # an optional extra (reasoning-gym) not installed
            continue
        if isinstance(factory, type):
            assert issubclass(factory, Env), env_id
            protocols[env_id] = "single" if issubclass(factory, SingleTurnEnv) else "multi"
            assert issubclass(factory, MultiTurnEnv) is (protocols[env_id] == "multi"), env_id
    tool_envs = {"gsm8k-python-v0", "math500-python-v0", "humaneval-feedback-v0", "big-add-v0"}
    assert {env_id for env_id, kind in protocols.items() if kind == "multi"} == tool_envs
    assert {"arith-v0", "gsm8k-v0", "math500-v0", "humaneval-v0", "mbpp-v0"} <= set(protocols)


def test_an_env_without_a_turn_protocol_says_which_to_subclass():
    class TasksOnly(Env):
        rubric = ExactMatch("capital")

        def load_tasks(self, split):
            return [{"country": "France", "capital": "Paris"}]

        def question(self, task):
            return f"What is the capital of {task['country']}?"

    env = TasksOnly()
    env.reset(seed=0)
    assert env.verify("Paris", env.tasks()[0]).passed  # the batch API needs no protocol
    with pytest.raises(NotImplementedError, match="subclass SingleTurnEnv or MultiTurnEnv"):
        env.step("Paris")
