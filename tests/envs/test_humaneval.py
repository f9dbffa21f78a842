"""HumanEval through the sandbox: every canonical solution passes, a wrong body fails every problem."""

from __future__ import annotations

import pytest

from rlvr_gym import envs
from rlvr_gym.envs.humaneval import HumanEvalEnv
from rlvr_gym.verifiers import Reason
from tests.support.code import HUMANEVAL, SHARED_DATA

pytestmark = pytest.mark.skipif(
    not HUMANEVAL.exists(), reason=f"offline HumanEval copy not found at {HUMANEVAL}"
)


@pytest.fixture(scope="module")
def env():
    return HumanEvalEnv(data_path=HUMANEVAL)


@pytest.mark.slow
def test_all_164_canonical_solutions_pass_and_wrong_bodies_fail(env):
    tasks = env.tasks("test")
    assert len(tasks) == 164
    verdicts = env.verify_batch([env.reference_completion(t) for t in tasks], tasks)
    failed = [
        (t["task_id"], v.reason.value, dict(v.details))
        for t, v in zip(tasks, verdicts, strict=True)
        if not v.passed
    ]
    assert not failed
    wrong = env.verify_batch([env.wrong_completions(t)[-1] for t in tasks], tasks)
    passed = [t["task_id"] for t, v in zip(tasks, wrong, strict=True) if v.passed or v.score > 0]
    assert not passed
    assert all(v.reason is Reason.WRONG_ANSWER for v in wrong)


def test_helpers_come_from_the_trusted_prompt(env):
    """HumanEval/32's test calls the prompt's poly(); redefining it must not make a wrong root pass."""
    task = env.tasks("test")[32]
    cheat = "```python\ndef poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 12345.0\n```"
    assert not env.verify(cheat, task).passed


def test_check_env_and_offline_loading_through_the_data_dir(monkeypatch):
    monkeypatch.setenv("RLVR_GYM_DATA_DIR", str(SHARED_DATA))
    env = envs.make("humaneval")
    assert len(env.tasks("test")) == 164
    assert envs.check_env(env, n_tasks=4) == list(envs.CHECK_NAMES)
    prompt = env.reset(options={"index": 0})[0]
    assert "```python" in prompt[-1]["content"] and "has_close_elements" in prompt[-1]["content"]
