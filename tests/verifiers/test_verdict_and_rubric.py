import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr_gym.verifiers import NumberMatch, Reason, Rubric, Verdict, run_verifier


def test_verdict_normalizes_reason_and_freezes_details():
    verdict = Verdict(1, True, "correct", "4", {"n": 1})
    assert verdict.reason is Reason.CORRECT and verdict.score == 1.0 and isinstance(verdict.score, float)
    with pytest.raises(TypeError):
        verdict.details["n"] = 2  # type: ignore[index]
    assert verdict.to_dict() == {
        "score": 1.0,
        "passed": True,
        "reason": "correct",
        "answer": "4",
        "details": {"n": 1},
    }


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((1.5, False, "wrong_answer"), ValueError),
        ((-0.1, False, "wrong_answer"), ValueError),
        ((math.nan, False, "wrong_answer"), ValueError),
        ((True, True, "correct"), TypeError),
        ((1.0, True, "wrong_answer"), ValueError),
        ((0.0, False, "correct"), ValueError),
        ((0.0, False, "mystery"), ValueError),
        ((0.0, 0, "no_answer"), TypeError),
    ],
)
def test_verdict_rejects_inconsistent_fields(args, error):
    with pytest.raises(error):
        Verdict(*args)


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0.01, 10), st.floats(0, 10))
def test_rubric_score_is_the_weighted_mean(a, b, wa, wb):
    rubric = Rubric(
        {
            "a": lambda c, t: Verdict.fail("wrong_answer", score=a),
            "b": lambda c, t: Verdict.fail("bad_format", score=b),
        },
        weights={"a": wa, "b": wb},
    )
    verdict = rubric("x", {})
    assert verdict.score == pytest.approx((wa * a + wb * b) / (wa + wb))
    assert verdict.reason is Reason.WRONG_ANSWER  # the first component decides pass and reason
    assert sum(rubric.normalized_weights.values()) == pytest.approx(1.0)
    assert verdict.details["scores"] == {"a": a, "b": b}


def test_rubric_passed_by_names_the_deciding_component():
    rubric = Rubric({"fmt": lambda c, t: Verdict.fail("bad_format"), "ok": NumberMatch()}, passed_by="ok")
    verdict = rubric("<answer>3</answer>", {"answer": "3"})
    assert (
        verdict.passed
        and verdict.score == 0.5
        and verdict.details["reasons"] == {"fmt": "bad_format", "ok": "correct"}
    )


def test_rubric_surfaces_a_component_bug_as_error_not_as_a_low_score():
    def broken(completion, task):
        raise KeyError("gold")

    verdict = Rubric({"ok": NumberMatch(), "broken": broken})("<answer>3</answer>", {"answer": "3"})
    assert verdict.reason is Reason.ERROR and "KeyError" in verdict.details["errors"]["broken"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"components": {}}, "at least one"),
        ({"components": {"a": NumberMatch()}, "weights": {"b": 1.0}}, "unknown components"),
        ({"components": {"a": NumberMatch()}, "weights": {"a": -1.0}}, ">= 0"),
        ({"components": {"a": NumberMatch()}, "weights": {"a": 0.0}}, "positive"),
        ({"components": {"a": NumberMatch()}, "passed_by": "b"}, "passed_by"),
    ],
)
def test_rubric_validates_its_configuration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Rubric(**kwargs)


def test_run_verifier_turns_bugs_and_bad_returns_into_error_verdicts():
    assert run_verifier(lambda c, t: 1 / 0, "x", {}).details["error"].startswith("ZeroDivisionError")
    assert run_verifier(lambda c, t: 1.0, "x", {}).reason is Reason.ERROR
    assert run_verifier(NumberMatch(), None, {"answer": "1"}).reason is Reason.BAD_FORMAT
    chat = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<answer>1</answer>"}]
    assert run_verifier(NumberMatch(), chat, {"answer": "1"}).passed


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("so <answer>1,234</answer>", "correct"),
        ("The final answer is $1234.", "correct"),
        ("1234.0", "correct"),
        ("Answer: 1235", "wrong_answer"),
        ("<answer>1234 or 1235</answer>", "bad_format"),
        ("<answer>nan</answer>", "bad_format"),
        ("<answer>1e3</answer>", "bad_format"),
        ("long working\nwith no commitment", "no_answer"),
        ("", "no_answer"),
        ("<answer>" + "9" * 5000 + "</answer>", "bad_format"),
    ],
)
def test_number_match_reasons(completion, reason):
    assert NumberMatch()(completion, {"answer": "1234"}).reason == reason


@given(st.text(max_size=300))
def test_number_match_never_raises_on_any_text(text):
    verdict = NumberMatch()(text, {"answer": "7"})
    assert isinstance(verdict, Verdict) and 0.0 <= verdict.score <= 1.0
