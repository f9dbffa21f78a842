"""Example 2: property-test a custom verifier with ``verifiers.testing``.

``FractionVerifier`` checks a rational answer written as a fraction, a LaTeX ``\\frac`` or a
decimal, parsing it with a whitelist regex (model text is never evaluated). ``check_verifier``
fuzzes it with hypothesis: equivalent renderings must pass, other values must fail, hostile
strings must not crash or hang it, and it must be deterministic. A naive string-equality
verifier is run through the same checker to show what a caught bug looks like.

    python -m examples.property_test_verifier
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from fractions import Fraction

from rlvr_gym.verifiers import Reason, Verdict, extract_answer
from rlvr_gym.verifiers.testing import (
    VerifierCheckError,
    check_verifier,
    completions,
    different_numbers,
    hostile_strings,
    number_renderings,
)

_N = r"(\d{1,12})"
_PATTERNS = (  # (regex, how its groups make a Fraction); whole-string matches only
    (
        re.compile(rf"(-?)\\d?frac\{{(-?\d{{1,12}})\}}\{{{_N}\}}"),
        lambda s, p, q: (-1 if s else 1) * Fraction(int(p), int(q)),
    ),
    (re.compile(rf"{_N}\s*\\d?frac\{{{_N}\}}\{{{_N}\}}"), lambda w, p, q: int(w) + Fraction(int(p), int(q))),
    (re.compile(rf"{_N}\s+{_N}/{_N}"), lambda w, p, q: int(w) + Fraction(int(p), int(q))),
    (re.compile(rf"(-?\d{{1,12}})\s*/\s*{_N}"), lambda p, q: Fraction(int(p), int(q))),
    (re.compile(r"(-?\d{1,12}(?:\.\d{1,12})?)"), lambda d: Fraction(d)),
)


def parse_fraction(text: str) -> Fraction | None:
    """A Fraction from ``a/b``, ``\\frac{a}{b}``, a mixed number or a decimal; else ``None``."""
    for wrapper in ("$", "\\(", "\\)", "\\[", "\\]", "**"):  # math mode and Markdown bold
        text = text.replace(wrapper, "")
    text = text.strip()
    for pattern, build in _PATTERNS:
        match = pattern.fullmatch(text)
        if match:
            try:
                return build(*match.groups())
            except ZeroDivisionError:
                return None
    return None


class FractionVerifier:
    """Passes when the extracted answer equals ``task["answer"]`` as a rational number."""

    def __call__(self, completion: str, task: dict) -> Verdict:
        answer = extract_answer(completion)
        if answer is None:
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > 200:
            return Verdict.fail(Reason.BAD_FORMAT, answer[:200], why="answer too long")
        value = parse_fraction(answer)
        if value is None:
            return Verdict.fail(Reason.BAD_FORMAT, answer, why="not a fraction or decimal")
        if value == Fraction(task["answer"]):
            return Verdict.correct(answer)
        return Verdict.fail(Reason.WRONG_ANSWER, answer)


class NaiveVerifier:
    """String equality: the bug the checker should catch (``0.75`` is ``3/4``)."""

    def __call__(self, completion: str, task: dict) -> Verdict:
        answer = extract_answer(completion)
        return (
            Verdict.correct(answer) if answer == task["answer"] else Verdict.fail(Reason.WRONG_ANSWER, answer)
        )


def check(verifier, gold: Fraction, max_examples: int) -> None:
    """The properties every fraction verifier must hold for the gold value ``gold``."""
    check_verifier(
        verifier,
        {"answer": f"{gold.numerator}/{gold.denominator}"},
        equivalent=completions(number_renderings(gold)),
        different=completions(different_numbers(gold)),
        hostile=hostile_strings(),
        time_budget=1.0,
        max_examples=max_examples,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=60, help="hypothesis examples per property")
    args = parser.parse_args(argv)
    for gold in (Fraction(3, 4), Fraction(-5, 8), Fraction(7, 2)):
        check(FractionVerifier(), gold, args.max_examples)
        print(f"FractionVerifier holds every property for {gold}")
    try:
        check(NaiveVerifier(), Fraction(3, 4), args.max_examples)
    except VerifierCheckError as exc:
        print(f"NaiveVerifier caught: {str(exc).splitlines()[0][:160]}")
    else:
        print("NaiveVerifier was not caught: the checker missed a known bug")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
