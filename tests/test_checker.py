"""The checker must catch each kind of broken env, or passing it would mean nothing."""

import random

import pytest

from rlvr_gym import envs
from rlvr_gym.envs import EnvCheckError, check_env
from rlvr_gym.envs.arith import ArithEnv
from rlvr_gym.verifiers import Verdict


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
    with pytest.raises(EnvCheckError, match="SingleTurnEnv"):
        check_env("arith")  # type: ignore[arg-type]
