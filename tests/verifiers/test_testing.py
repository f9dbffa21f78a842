"""rlvr_gym.verifiers.testing: the strategies say what they promise, and check_verifier catches each fault."""

from __future__ import annotations

import itertools
import time
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_gym.verifiers import ExactMatch, NumberMatch, Reason, Verdict
from rlvr_gym.verifiers.math import fast_number, normalize
from rlvr_gym.verifiers.math.parse import parse
from rlvr_gym.verifiers.testing import (
    HOSTILE_ANSWERS,
    VerifierCheckError,
    check_verifier,
    completions,
    different_numbers,
    hostile_strings,
    number_renderings,
    pi_renderings,
    radical_renderings,
)

TASK = {"answer": "42"}
EQUIVALENT = completions(number_renderings(42))
DIFFERENT = completions(different_numbers(42))


@settings(max_examples=100, deadline=None)
@given(st.fractions(max_denominator=40).flatmap(lambda v: st.tuples(st.just(v), number_renderings(v))))
def test_number_renderings_denote_the_value(pair: tuple[Fraction, str]) -> None:
    value, text = pair
    assert fast_number(normalize(text)) == value


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_symbolic_renderings_denote_the_value(data: st.DataObject) -> None:
    coefficient, radicand = data.draw(st.integers(1, 9)), data.draw(st.sampled_from([2, 3, 5, 6, 7]))
    radical = data.draw(radical_renderings(coefficient, radicand))
    assert sympy.simplify(parse(normalize(radical)) - coefficient * sympy.sqrt(radicand)) == 0
    p, q = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    assert sympy.simplify(parse(normalize(data.draw(pi_renderings(p, q)))) - p * sympy.pi / q) == 0


@settings(max_examples=60, deadline=None)
@given(st.fractions(max_denominator=40).flatmap(lambda v: st.tuples(st.just(v), different_numbers(v))))
def test_different_numbers_differ(pair: tuple[Fraction, str]) -> None:
    value, text = pair
    assert fast_number(normalize(text)) != value


@settings(max_examples=30, deadline=None)
@given(hostile_strings())
def test_hostile_strings_are_strings(text: str) -> None:
    assert isinstance(text, str)


def test_hostile_list_is_long_and_varied() -> None:
    assert len(HOSTILE_ANSWERS) >= 30
    assert any(len(a) >= 100_000 for a in HOSTILE_ANSWERS)


def test_a_good_verifier_passes() -> None:
    check_verifier(
        NumberMatch(),
        TASK,
        equivalent=st.sampled_from(["<answer>42</answer>", "answer: 42"]),
        different=DIFFERENT.map(lambda c: f"<answer>{c}</answer>"),
        max_examples=20,
    )


class Raises:
    def __call__(self, completion: str, task) -> Verdict:
        if "{" in completion:
            raise KeyError("boom")
        return Verdict.fail(Reason.WRONG_ANSWER)


class ReturnsFloat:
    def __call__(self, completion: str, task) -> float:
        return 0.5


class Flaky:
    def __init__(self) -> None:
        self.counter = itertools.count()

    def __call__(self, completion: str, task) -> Verdict:
        return Verdict.fail(Reason.WRONG_ANSWER, score=(next(self.counter) % 2) * 0.5)


class Slow:
    def __call__(self, completion: str, task) -> Verdict:
        if len(completion) > 1000:
            time.sleep(0.3)
        return Verdict.fail(Reason.WRONG_ANSWER)


class AcceptsAll:
    def __call__(self, completion: str, task) -> Verdict:
        return Verdict.correct(completion)


@pytest.mark.parametrize(
    ("verifier", "kwargs", "rule"),
    [
        (Raises(), {}, "never raises"),
        (ReturnsFloat(), {}, "returns Verdict"),
        (Flaky(), {}, "deterministic"),
        (Slow(), {"time_budget": 0.1}, "bounded time"),
        (AcceptsAll(), {"different": DIFFERENT}, "distinct values disagree"),
        (ExactMatch(), {"equivalent": EQUIVALENT}, "equivalent renderings agree"),
    ],
    ids=["raises", "not-a-verdict", "flaky", "slow", "accepts-all", "string-match-only"],
)
def test_check_verifier_catches(verifier, kwargs: dict, rule: str) -> None:
    with pytest.raises(VerifierCheckError, match=rule):
        check_verifier(verifier, TASK, max_examples=30, **kwargs)


def test_check_verifier_validates_arguments() -> None:
    with pytest.raises(TypeError):
        check_verifier("not callable", TASK)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        check_verifier(NumberMatch(), TASK, time_budget=0)
