"""Countdown: the whitelist expression parser, the verifier's multiset rule, and the env."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from rlvr_gym import envs
from rlvr_gym.envs.audit import audit
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.countdown import CountdownVerifier
from rlvr_gym.verifiers.expression import ExpressionError, evaluate
from tests.support.timing import bound

TASK = {"numbers": [3, 5, 2, 5], "target": 16}


@pytest.mark.parametrize(
    ("text", "value", "numbers"),
    [
        ("(3 + 5) * 2", 16, (3, 5, 2)),
        ("6 / 4 * 2", 3, (6, 4, 2)),  # exact rationals: no float rounding, left to right
        ("3 + 5 * 2", 13, (3, 5, 2)),  # precedence
        ("10 - 4 - 3", 3, (10, 4, 3)),  # left associative
        ("7 × 3 ÷ 7", 3, (7, 3, 7)),  # the symbols people write
        ("((1))", 1, (1,)),
    ],
)
def test_the_parser_computes_exact_values_and_lists_the_numbers(text, value, numbers):
    result = evaluate(text)
    assert result.value == Fraction(value) and result.numbers == numbers


@pytest.mark.parametrize(
    "text",
    [
        "2 ** 99999999",  # no power operator: a memory bomb elsewhere
        "__import__('os').system('true')",
        "-3 + 5",  # no unary minus
        "1 / (2 - 2)",
        "(" * 33 + "1" + ")" * 33,
        "1" * 13,
        "3 5",
        "(3 + 5",
        "",
        "3 + 5.5",
    ],
)
def test_the_parser_refuses_everything_outside_its_whitelist(text):
    with pytest.raises(ExpressionError):
        evaluate(text)


def test_hostile_input_is_refused_in_bounded_time():
    verifier = CountdownVerifier()
    for hostile in [
        "(" * 1_000_000,
        "9" * (1 << 20),
        "<answer>" + "(" * 100_000 + "</answer>",
        "1+" * 500_000 + "1",
    ]:
        started = time.perf_counter()
        verdict = verifier(f"<answer>{hostile}</answer>", TASK)
        assert not verdict.passed and verdict.reason in (Reason.BAD_FORMAT, Reason.NO_ANSWER)
        assert time.perf_counter() - started < bound(1.0)


@pytest.mark.parametrize(
    ("answer", "passed", "why"),
    [
        ("(3 + 5) * 2", True, None),
        ("(5 + 3) * 2 = 16", True, None),
        ("5 * 2 + 5 + 3 - 2", False, "too often"),  # 2 is given once
        ("5 + 5 + 3 * 2", True, None),  # 5 is given twice: both may be used
        ("(3 + 5) * 2 * 5 / 5", False, "too often"),  # but not three times
        ("(4 + 4) * 2", False, "not given"),
        ("(3 + 5) * 2 = 17", False, "not 17"),
        ("3 + 5 + 2", False, "not 16"),
        ("(3 + 5) * 2 +", False, "ends too early"),
    ],
)
def test_the_verifier_checks_value_and_the_multiset_of_numbers(answer, passed, why):
    verdict = CountdownVerifier()(f"<answer>{answer}</answer>", TASK)
    assert verdict.passed is passed
    if why:
        assert why in verdict.details["why"]


def test_use_all_requires_every_number_and_a_hedge_fails():
    assert not CountdownVerifier(use_all=True)("<answer>(3 + 5) * 2</answer>", TASK).passed
    assert CountdownVerifier(use_all=True)("<answer>5 + 5 + 3 * 2</answer>", TASK).passed
    hedge = "<answer>3 + 5</answer> <answer>(3 + 5) * 2</answer>"
    assert CountdownVerifier()(hedge, TASK).reason is Reason.WRONG_ANSWER


def test_the_verifier_honours_the_operations_knob():
    """A task that poses only + and - pays no * or / (the knob once only changed the prompt)."""
    env = envs.make("countdown", operations="+-")
    task = {"numbers": [3, 5, 2, 6], "target": 16}
    for forbidden in ("(3 + 5) * 2", "(5 - 3) * (2 + 6)", "(3 + 5) / 2 * (2 + 6)"):
        verdict = env.verify(f"<answer>{forbidden}</answer>", task)
        assert not verdict.passed and verdict.score == 0.0, forbidden
        why = env.rubric.components["correct"](f"<answer>{forbidden}</answer>", task).details["why"]
        assert "operations the task does not allow" in why
    assert env.verify("<answer>5 + 6 + 3 + 2</answer>", task).passed
    assert "* and /" not in env.system_prompt and "/" not in env.question(env.tasks("test")[0])
    assert CountdownVerifier()("<answer>(3 + 5) * 2</answer>", task).passed  # the default: all four
    with pytest.raises(InvalidArgumentError):
        CountdownVerifier(operations="^")


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"num_count": 2, "max_number": 9},
        {"num_count": 5, "operations": "*-", "use_all": True, "max_target": 10**9},
        {"operations": "+"},
    ],
)
def test_every_generated_task_is_solved_by_its_reference_and_poses_a_real_target(knobs):
    env = envs.make("countdown", train_size=300, **knobs)
    tasks = list(env.tasks("train"))
    verdicts = env.verify_batch([env.reference_completion(t) for t in tasks], tasks)
    assert all(v.passed for v in verdicts)
    assert all(
        t["target"] not in t["numbers"] and len(t["numbers"]) == env.params["num_count"] for t in tasks
    )
    ops = set(env.params["operations"])
    assert all(set(c for c in t["solution"] if c in "+-*/") <= ops for t in tasks)


def test_tasks_are_seeded_and_the_same_in_two_instances():
    one, two = envs.make("countdown"), envs.make("countdown")
    assert list(one.tasks("test")[:50]) == list(two.tasks("test")[:50])
    assert list(envs.make("countdown", seed=1).tasks("test")[:50]) != list(one.tasks("test")[:50])


@pytest.mark.parametrize(
    "bad", [{"num_count": 1}, {"num_count": 9}, {"operations": "^"}, {"max_number": 0}, {"seed": "x"}]
)
def test_bad_knobs_are_clear_errors(bad):
    with pytest.raises((InvalidArgumentError, TypeError)):
        envs.make("countdown", **bad)


def test_check_env_and_the_audit_pass():
    env = envs.make("countdown")
    assert envs.check_env(env, n_tasks=6) == list(envs.CHECK_NAMES)
    report = audit(env, n_tasks=4)
    assert report.ok, report.render()
