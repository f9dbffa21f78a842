"""Format verifiers: tags, integer answers, length band, numeric proximity, and Rubric composition."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_gym.verifiers import Reason, Rubric
from rlvr_gym.verifiers.format import IntegerAnswer, LengthBand, NumericProximity, TagFormat
from rlvr_gym.verifiers.math import MathVerifier
from rlvr_gym.verifiers.testing import check_verifier, completions, different_numbers, number_renderings

GOOD = "<think>2 + 2 = 4</think>\n<answer>4</answer>"


@pytest.mark.parametrize(
    ("completion", "strict", "soft"),
    [
        (GOOD, True, True),
        ("  <think>a</think><answer>4</answer>\n", True, True),
        ("Sure! <think>a</think> so <answer>4</answer>", False, True),
        ("<answer>4</answer><think>a</think>", False, False),
        ("<think>a</think>", False, False),
        ("<think>a</think><answer>4</answer><answer>5</answer>", False, False),
        ("<think><think>a</think><answer>4</answer>", False, False),
        ("", False, False),
    ],
)
def test_tag_format(completion: str, strict: bool, soft: bool) -> None:
    assert TagFormat()(completion, {}).passed is strict
    assert TagFormat(strict=False)(completion, {}).passed is soft


def test_soft_tag_format_gives_partial_credit() -> None:
    assert TagFormat(strict=False)("<answer>4</answer>", {}).score == 0.25
    assert TagFormat(strict=False)("nothing", {}).score == 0.0
    assert TagFormat(strict=False)("<think>x</think><answer>4</answer>", {}).score == 1.0
    assert TagFormat()("<answer>4</answer>", {}).score == 0.0


def test_tag_format_validates_names() -> None:
    with pytest.raises(ValueError):
        TagFormat(("think", "a b"))
    with pytest.raises(ValueError):
        TagFormat(())


@pytest.mark.parametrize(
    ("completion", "passed"),
    [
        ("#### 1,234", True),
        ("<answer>-7</answer>", True),
        ("The answer is $18.", True),
        ("#### 18.5", False),
        ("#### 18.0", False),
        ("\\boxed{\\frac{1}{2}}", False),
        ("#### eighteen", False),
    ],
)
def test_integer_answer(completion: str, passed: bool) -> None:
    assert IntegerAnswer()(completion, {}).passed is passed


def test_integer_answer_without_answer() -> None:
    assert IntegerAnswer()("long\nworking", {}).reason is Reason.NO_ANSWER


def test_length_band() -> None:
    band = LengthBand(10, 20, slack=10)
    assert band("x" * 15, {}).passed
    assert band("x" * 25, {}).score == pytest.approx(0.5)
    assert band("x" * 5, {}).score == pytest.approx(0.5)
    assert band("x" * 40, {}).score == 0.0
    assert LengthBand(2, 3, unit="words")("one two", {}).passed
    with pytest.raises(ValueError):
        LengthBand(5, 1)
    with pytest.raises(ValueError):
        LengthBand(unit="tokens")


@settings(max_examples=60, deadline=None)
@given(st.integers(-10_000, 10_000), st.integers(1, 1000))
def test_numeric_proximity_is_monotone(gold: int, distance: int) -> None:
    """A closer wrong answer never earns less than a farther one; only the exact answer passes."""
    proximity = NumericProximity()
    task = {"answer": str(gold)}
    exact = proximity(f"#### {gold}", task)
    near = proximity(f"#### {gold + distance}", task)
    far = proximity(f"#### {gold + 2 * distance}", task)
    assert exact.passed and exact.score == 1.0
    assert not near.passed and near.score < 1.0
    assert near.score >= far.score


def test_numeric_proximity_non_numbers() -> None:
    assert NumericProximity()("#### seven", {"answer": "7"}).reason is Reason.BAD_FORMAT
    assert NumericProximity()("#### 1e999999", {"answer": "7"}).score == 0.0
    with pytest.raises(ValueError):
        NumericProximity()("#### 7", {"answer": "x+1"})


def test_rubric_reports_correctness_and_format_separately() -> None:
    rubric = Rubric(
        {"correct": MathVerifier(), "format": TagFormat()}, weights={"format": 0.25}, passed_by="correct"
    )
    right_badly_formatted = rubric("The answer is 4.", {"answer": "4"})
    assert right_badly_formatted.passed
    assert right_badly_formatted.score == pytest.approx(0.8)
    assert right_badly_formatted.details["scores"] == {"correct": 1.0, "format": 0.0}
    wrong_well_formatted = rubric("<think>x</think><answer>5</answer>", {"answer": "4"})
    assert not wrong_well_formatted.passed and wrong_well_formatted.score == pytest.approx(0.2)
    assert wrong_well_formatted.details["reasons"] == {"correct": "wrong_answer", "format": "correct"}
    assert rubric(GOOD, {"answer": "4"}).score == 1.0


def test_rubric_with_proximity_and_length() -> None:
    rubric = Rubric(
        {"correct": MathVerifier(), "close": NumericProximity(), "length": LengthBand(0, 200)},
        weights={"close": 0.5, "length": 0.1},
        passed_by="correct",
    )
    near, far = rubric("#### 101", {"answer": "100"}), rubric("#### 300", {"answer": "100"})
    assert not near.passed and near.score > far.score > 0


@pytest.mark.parametrize(
    "verifier",
    [TagFormat(), TagFormat(strict=False), IntegerAnswer(), LengthBand(10, 200), NumericProximity()],
    ids=repr,
)
def test_check_verifier_on_format_verifiers(verifier) -> None:
    """Every shipped format verifier survives the checker (hostile input, determinism, time)."""
    equivalent = different = None
    if isinstance(verifier, NumericProximity):
        equivalent = completions(number_renderings(42))
        different = completions(different_numbers(42))
    elif isinstance(verifier, IntegerAnswer):
        equivalent = st.sampled_from(["#### 42", "<answer>-42</answer>", "The answer is 4,200."])
        different = st.sampled_from(["#### 4.2", "<answer>\\frac{1}{2}</answer>", "#### forty-two"])
    elif isinstance(verifier, TagFormat):
        equivalent = st.text(alphabet="abc 123\n", max_size=30).map(
            lambda t: f"<think>{t}</think><answer>{t}</answer>"
        )
        different = st.text(alphabet="abc 123\n", max_size=30).map(lambda t: f"<answer>{t}</answer>")
    check_verifier(
        verifier,
        {"answer": "42"},
        equivalent=equivalent,
        different=different,
        time_budget=1.0,
        max_examples=30,
    )
