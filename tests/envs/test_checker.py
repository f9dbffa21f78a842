"""The checker must catch each kind of broken env, or passing it would mean nothing."""

import random
import subprocess
import sys
import threading

import pytest

from rlvr_gym import envs
from rlvr_gym.envs import EnvCheckError, check_env
from rlvr_gym.envs.arith import ArithEnv
from rlvr_gym.verifiers import Rubric, Verdict


class ForgivingVerifier(ArithEnv):
    """Accepts anything: wrong answers score 1.0."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.rubric = lambda completion, task: Verdict.correct(completion)


class BrokenOracle(ArithEnv):
    def reference_completion(self, task):
        return f"<answer>{int(task['answer']) + 1}</answer>"


class NoOracle(ArithEnv):
    reference_completion = envs.SingleTurnEnv.reference_completion


class RandomTasks(ArithEnv):
    def load_tasks(self, split):
        tasks = list(super().load_tasks(split)[:20])

        class Shuffling(list):
            def __getitem__(self, i):
                return random.choice(tasks) if isinstance(i, int) else list.__getitem__(self, i)

        return Shuffling(tasks)


class NoisyVerdicts(ArithEnv):
    def verify(self, completion, task):
        score = random.random() * 0.99
        return (
            Verdict.fail("wrong_answer", score=score)
            if random.random() < 0.5
            else super().verify(completion, task)
        )


class SteppingForever(ArithEnv):
    def step(self, action):
        self._stepped = False
        return super().step(action)


class TextActionsRefused(ArithEnv):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.action_space = envs.ChatMessages()


class BadStepTuple(ArithEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, False, truncated, info


@pytest.mark.parametrize(
    ("env_class", "rule"),
    [
        (ForgivingVerifier, "wrong_answers"),
        (BrokenOracle, "oracle"),
        (NoOracle, "oracle"),
        (RandomTasks, "reset"),
        (NoisyVerdicts, "determinism"),
        (SteppingForever, "step"),
        (TextActionsRefused, "spaces"),
        (BadStepTuple, "step"),
    ],
)
def test_checker_names_the_broken_rule(env_class, rule):
    with pytest.raises(EnvCheckError) as caught:
        check_env(env_class())
    assert caught.value.check == rule


def test_checker_refuses_non_envs():
    with pytest.raises(EnvCheckError, match=r"rlvr_gym\.envs\.Env"):
        check_env("arith")  # type: ignore[arg-type]


class MutatingVerifier(ArithEnv):
    """A verifier that writes into the task it scores."""

    def __init__(self, **kw):
        super().__init__(**kw)

        def peek(completion, task):
            task["attempts"] = task.get("attempts", 0) + 1
            return (
                Verdict.correct() if str(task["answer"]) in str(completion) else Verdict.fail("wrong_answer")
            )

        self.rubric = Rubric({"correct": peek})


class UnpicklableEnv(ArithEnv):
    """Holds a lock, which no process can hand to another."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.lock = threading.Lock()


class UnseededTasks(ArithEnv):
    """load_tasks shuffles with unseeded randomness: each instance (each worker) sees other tasks."""

    def load_tasks(self, split):
        tasks = list(super().load_tasks(split)[:50])
        random.shuffle(tasks)
        return tasks


class LeakyWorker(ArithEnv):
    """Starts a helper process on first verify and never stops it."""

    helper = None

    def verify(self, completion, task):
        if LeakyWorker.helper is None:
            LeakyWorker.helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        return super().verify(completion, task)


@pytest.mark.parametrize(
    ("env_class", "rule"),
    [
        (MutatingVerifier, "verify_pure"),
        (UnpicklableEnv, "pickle"),
        (UnseededTasks, "instances"),
        (LeakyWorker, "close"),
    ],
)
def test_checker_catches_each_new_rule_on_a_registered_env(env_class, rule):
    env_id = f"broken/{env_class.__name__.lower()}-v0"
    envs.register(env_id, env_class)
    try:
        with pytest.raises(EnvCheckError) as caught:
            check_env(envs.make(env_id))
        assert caught.value.check == rule, caught.value
    finally:
        envs.deregister(env_id)
        if LeakyWorker.helper is not None:
            LeakyWorker.helper.kill()
            LeakyWorker.helper.wait()
            LeakyWorker.helper = None


def test_spec_rule_catches_an_entry_point_no_worker_can_rebuild():
    envs.register("broken/lambda-v0", lambda **kw: ArithEnv(**kw))  # a lambda does not pickle
    try:
        with pytest.raises(EnvCheckError) as caught:
            check_env(envs.make("broken/lambda-v0"))
        assert caught.value.check == "spec" and "lambda" in str(caught.value)
    finally:
        envs.deregister("broken/lambda-v0")


def test_rebuild_rules_run_only_with_a_spec():
    assert {"spec", "instances"} <= set(check_env(envs.make("arith")))
    assert not {"spec", "instances"} & set(check_env(ArithEnv()))
