"""Templates per answer kind: the project's own NumberMatch and ExactMatch pass their kind's defaults."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from rlvr_gym.verifiers import ExactMatch, NumberMatch, extract_answer
from rlvr_gym.verifiers.testing import (
    ANSWER_KINDS,
    TEMPLATES,
    VerifierCheckError,
    check_verifier,
    kind_defaults,
)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("**Answer:** 3000", "3000"),
        ("$3000$", "3000"),
        ("So the answer is **3000**.", "3000"),
        ("Final answer: \\(3000\\)", "3000"),
        ("<answer>$3$ or $4$</answer>", "$3$ or $4$"),  # a hedge stays a hedge
    ],
)
def test_extract_answer_drops_markup_around_the_answer(text, answer):
    assert extract_answer(text) == answer


@pytest.mark.parametrize("gold", ["3000", "-12.5", "7"])
def test_number_match_passes_the_number_kind(gold):
    check_verifier(NumberMatch(), {"answer": gold}, kind="number", max_examples=25)


@pytest.mark.parametrize("gold", ["Paris", "New York City"])
def test_exact_match_passes_the_text_kind(gold):
    check_verifier(ExactMatch(), {"answer": gold}, kind="text", max_examples=25)


def test_kind_defaults_catch_a_substring_verifier():
    from rlvr_gym.verifiers import Verdict

    def substring(completion, task):
        return Verdict.correct() if task["answer"] in completion else Verdict.fail("wrong_answer")

    with pytest.raises(VerifierCheckError, match="distinct values disagree"):
        check_verifier(
            substring, {"answer": "3000"}, kind="number", equivalent=st.just("3000"), max_examples=25
        )


def test_every_kind_has_templates_and_unknown_kind_is_refused():
    assert set(TEMPLATES) == set(ANSWER_KINDS)
    assert kind_defaults("code", "def f():\n    return 1")["different"] is None
    with pytest.raises(ValueError, match="unknown answer kind"):
        kind_defaults("poem", "x")
