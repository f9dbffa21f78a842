"""Is a predicted answer the same as the gold one?

:func:`check` runs in the caller's process and settles what it can cheaply: equal normalized
strings, exact numbers (``fractions``), text answers, hedges. Only what remains goes to
:func:`rlvr_gym.verifiers.math.symbolic.compare_symbolic`, which parses both sides with our own grammar and compares them with
sympy (:mod:`rlvr_gym.verifiers.math.symbolic`), inside the budgeted worker of
:mod:`rlvr_gym.verifiers.math.budget`. The caller never imports sympy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from rlvr_gym.verifiers.math.exactness import MIN_PLACES, decimal_places, rounded_match
from rlvr_gym.verifiers.math.normalize import decimal_comma, fast_number, is_hedged, normalize
from rlvr_gym.verifiers.math.rewrite import LABEL as _LABEL
from rlvr_gym.verifiers.math.rewrite import (
    as_tuples,
    interval_of_chain,
    intervals_of_bounds,
    looks_like_interval,
    solutions,
    split_top,
)

EQUAL, DIFFERENT, INVALID, TOO_LARGE, TIMEOUT, ERROR = (
    "equal",
    "different",
    "invalid",
    "too_large",
    "timeout",
    "error",
)
MAX_NORMALIZED_CHARS = 400
WORKER_TARGET = "rlvr_gym.verifiers.math.symbolic:compare_symbolic"

_WORDS = re.compile(r"[A-Za-z][A-Za-z ]+")
_HAS_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Equivalence:
    """The outcome: ``status`` (one of the module constants), how it was settled, and why."""

    status: str
    path: str
    why: str = ""


_ARITHMETIC = re.compile(r"[\d\s+\-*/().,^{}]+")
_INEQUALITY = re.compile(r"[<>!]|\\(?:le|ge|ne|lt|gt)")
_PERCENT_SIGN = re.compile(r"%|\\text\{\s*percent\s*\}|\bpercent\b")
_TEXT_GROUP = re.compile(r"\\[a-zA-Z]+\s*\{[^{}]*\}")
_PROSE = re.compile(r"[A-Za-z]{2,},?\s+[A-Za-z]{2,},?\s+[A-Za-z]{2,}")
"""Three words in a row: a sentence, not a committed answer (``the product of the numbers``)."""


_DANGLING = re.compile(
    r"(?:[-+*/^=,_({\[:]|\\(?:[dt]?frac|sqrt|cdot|times|div|[pm]p|le|ge|leq|geq|neq|cup|cap|text|mathrm"
    r"|begin|left)|\\\\)\s*$|\\(?:boxed|fbox|\[|\()"
)


def incomplete(text: str) -> str | None:
    """Why ``text`` (normalized) is cut off, or ``None``: decided here, never in the worker.

    Unbalanced braces or brackets, a trailing operator or command, a left-over ``\\boxed`` or
    opening delimiter: what a completion stopped mid-answer leaves behind.
    """
    if text.count("{") != text.count("}"):
        return "unbalanced braces"
    if text.count("(") + text.count("[") != text.count(")") + text.count("]"):
        return "unbalanced brackets"
    if _DANGLING.search(text):
        return "ends mid-expression"
    return None


def last_side(text: str) -> str:
    """The value an equation chain states: ``x = 5+5+1 = 11`` and ``(p,q)=(3,2)`` -> the last side.

    Only when every earlier side is a label (``x``, ``(p,q)``, ``|AB|``, ``f(x)``, ``V_1:V_2``) or
    plain arithmetic, so an equation that constrains a variable (``2x = 4``) stays whole. With
    ``\\approx`` the exact value before it counts (``x = 1/3 \\approx 0.33`` -> ``1/3``), or the
    approximation when only a label precedes it (``x \\approx 11`` -> ``11``).
    """
    if _INEQUALITY.search(text) or ("=" not in text and "\\approx" not in text):
        return text
    exact, _, approximate = text.partition("\\approx")
    *earlier, last = split_top(exact, "=")
    if approximate and (not last.strip() or _LABEL.fullmatch(last)):
        earlier, last = [*earlier, last], split_top(approximate, "=")[0]
    numeric = _ARITHMETIC.fullmatch(last) is not None  # 7 = 11a+c is an equation, x = 5+5+1 = 11 a value
    if last.strip() and all(
        (numeric and _ARITHMETIC.fullmatch(side)) or _LABEL.fullmatch(side) for side in earlier
    ):
        return last.strip()
    return text


def top_level_items(text: str) -> list[str]:
    """``a=1,(b,c)=(2,3)`` -> ``["a=1", "(b,c)=(2,3)"]``: split at commas outside brackets."""
    return split_top(text, ",")


def _labelled(items: list[str]) -> dict[str, str] | None:
    """``{label: value}`` when every item is ``label = value`` with distinct labels, else None."""
    pairs = {}
    for item in items:
        sides = split_top(item, "=")
        if len(sides) != 2 or not _LABEL.fullmatch(sides[0]) or sides[0].strip() in pairs:
            return None
        pairs[sides[0].strip()] = sides[1].strip()
    return pairs


def drop_labels(text: str) -> str:
    """Each listed value without its label or working: ``x=-2, x=3`` -> ``-2,3``."""
    return ",".join(last_side(item) for item in top_level_items(text))


def _is_words(text: str) -> bool:
    return bool(_WORDS.fullmatch(text)) and len(text) > 1


def _is_several(norm: str) -> bool:
    """Gold names several values (a top-level comma list, ``\\pm``, a union of intervals): "or"/"and"
    then list them (``x < -2 \\text{ or } x > 3`` for ``(-\\infty,-2) \\cup (3,\\infty)``)."""
    if "\\pm" in norm or "\\mp" in norm or "\\cup" in norm:
        return True
    depth = 0
    for char in norm:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            return True
    return False


def numbers_equal(
    gold: str, pred: str, gold_value: Fraction, pred_value: Fraction, precision: int = MIN_PLACES
) -> bool:
    """Exact equality, or the documented decimal rule of :mod:`rlvr_gym.verifiers.math.exactness`.

    ``gold``/``pred`` are the normalized strings (their written decimal places matter);
    ``precision`` is the fewest places a written decimal needs to stand for a value.
    """
    if gold_value == pred_value:
        return True
    pred_places, gold_places = decimal_places(pred), decimal_places(gold)
    if pred_places is not None and gold_places is None:
        return rounded_match(gold_value, pred_value, pred_places, precision)
    if gold_places is not None and pred_places is None:
        return rounded_match(pred_value, gold_value, gold_places, precision)
    return False


def _percent_equal(
    gold_raw: str, pred_raw: str, gold: str, pred: str, values: tuple[Fraction, Fraction], precision: int
) -> bool:
    """``15\\%`` is the number 15 and also the fraction 0.15: either reading passes.

    So ``15\\%`` matches gold ``15`` and gold ``0.15``; a bare ``0.15`` matches gold
    ``15\\%`` but not gold ``15`` (no percent sign on either side: no conversion).
    """
    gold_value, pred_value = values
    if _PERCENT_SIGN.search(pred_raw) and numbers_equal(gold, pred, gold_value, pred_value / 100, precision):
        return True
    return bool(_PERCENT_SIGN.search(gold_raw)) and numbers_equal(
        gold, pred, gold_value / 100, pred_value, precision
    )


def _labelled_equal(
    gold: dict[str, str], pred: dict[str, str], *, timeout: float, worker: object | None, precision: int
) -> Equivalence:
    if set(gold) != set(pred):
        return Equivalence(DIFFERENT, "labelled", "the labels differ")
    for label, value in gold.items():
        result = check(value, pred[label], timeout=timeout, worker=worker, precision=precision)
        if result.status != EQUAL:
            return result
    return Equivalence(EQUAL, "labelled")


def _solution_tuples(gold: str, pred: str) -> tuple[str, str] | None:
    """Labelled solution sets (``p=5,q=2;p=7,q=2``) on either side as lists of tuples.

    ``None`` when neither side is one; ``("", "")`` when both are and their labels differ.
    The tuple positions follow the gold's labels when it has them, else the prediction's.
    """
    gold_solutions = solutions(top_level_items(gold))
    pred_solutions = solutions(top_level_items(pred))
    if gold_solutions is None and pred_solutions is None:
        return None
    order = (gold_solutions or pred_solutions)[0]  # type: ignore[index]
    if pred_solutions is not None and set(pred_solutions[0]) != set(order):
        return ("", "")
    return (
        as_tuples(order, gold_solutions[1]) if gold_solutions else gold,
        as_tuples(order, pred_solutions[1]) if pred_solutions else pred,
    )


def _as_intervals(gold: str, pred: str) -> tuple[str, str]:
    """A side written as bounds (``x \\ge 3``) becomes intervals when the other is intervals."""
    if looks_like_interval(gold) and (pred_intervals := intervals_of_bounds(pred)):
        return gold, pred_intervals
    if looks_like_interval(pred) and (gold_intervals := intervals_of_bounds(gold)):
        return gold_intervals, pred
    return gold, pred


def check(
    gold: str, pred: str, *, timeout: float, worker: object | None = None, precision: int = MIN_PLACES
) -> Equivalence:
    """Compare ``pred`` with ``gold``: fast paths here, the rest in ``worker`` under ``timeout``.

    ``worker`` is a :class:`rlvr_gym.verifiers.math.budget.Worker` (the shared one when ``None``);
    ``precision`` is the decimal rule's fewest places (:mod:`rlvr_gym.verifiers.math.exactness`).
    """
    gold_norm, pred_norm = normalize(gold), normalize(pred)
    if is_hedged(pred) and not is_hedged(gold) and not _is_several(gold_norm):
        return Equivalence(DIFFERENT, "hedge", "the answer names more than one value")
    rewrite = max(len(gold_norm), len(pred_norm)) <= MAX_NORMALIZED_CHARS  # the rewrites stay linear anyway
    if rewrite and (tuples := _solution_tuples(gold_norm, pred_norm)) is not None:
        if not tuples[0]:
            return Equivalence(DIFFERENT, "labelled", "the labels differ")
        gold_norm, pred_norm = tuples
    gold_pairs, pred_pairs = (_labelled(top_level_items(n)) for n in (gold_norm, pred_norm))
    if gold_pairs and pred_pairs and len(gold_pairs) > 1:  # a_3 = 2, a_{37} = 19: labels must match too
        return _labelled_equal(gold_pairs, pred_pairs, timeout=timeout, worker=worker, precision=precision)
    gold_values = drop_labels(gold_norm)
    if gold_values != gold_norm or "=" not in gold_norm:  # gold an equation (2x+4y-3=0): keep pred's
        pred_norm = drop_labels(pred_norm)
    gold_norm = interval_of_chain(gold_values)
    pred_norm = interval_of_chain(pred_norm)
    if rewrite:
        gold_norm, pred_norm = _as_intervals(gold_norm, pred_norm)
    if not pred_norm:
        return Equivalence(INVALID, "string", "empty answer")
    if gold_norm == pred_norm:
        return Equivalence(EQUAL, "string")
    if len(pred_norm) > MAX_NORMALIZED_CHARS:
        return Equivalence(INVALID, "string", f"answer longer than {MAX_NORMALIZED_CHARS} characters")
    gold_number, pred_number = fast_number(gold_norm), fast_number(pred_norm)
    if gold_number is None and pred_number is not None and (pointed := decimal_comma(gold_norm, lists=True)):
        gold_norm, gold_number = pointed, fast_number(pointed)  # only 1.000,99: a gold "1,5" may be a list
    if gold_number is not None and pred_number is None:
        pointed = decimal_comma(pred_norm)
        if pointed is not None:
            pred_norm, pred_number = pointed, fast_number(pointed)
    if gold_number is not None and pred_number is not None:
        same = numbers_equal(gold_norm, pred_norm, gold_number, pred_number, precision) or _percent_equal(
            gold, pred, gold_norm, pred_norm, (gold_number, pred_number), precision
        )
        return Equivalence(EQUAL if same else DIFFERENT, "numeric")
    if ("\\" not in gold_norm and _is_words(gold_norm)) or (gold_number is not None and _is_words(pred_norm)):
        same_words = gold_norm.casefold() == pred_norm.casefold()
        return Equivalence(EQUAL if same_words else DIFFERENT, "text")
    if _PROSE.search(_TEXT_GROUP.sub(" ", pred)) and not _PROSE.search(_TEXT_GROUP.sub(" ", gold)):
        return Equivalence(INVALID, "prose", "a sentence, not a committed answer")
    if (cut := incomplete(pred_norm)) is not None:
        return Equivalence(INVALID, "syntax", cut)
    if (
        gold_number is not None
        and pred_number is None
        and not _HAS_DIGIT.search(pred_norm)
        and "\\" not in pred_norm
    ):
        return Equivalence(DIFFERENT if pred_norm.isalpha() else INVALID, "numeric", "not a number")
    if ("\\pm" in pred_norm or "\\mp" in pred_norm) and "\\pm" not in gold_norm and gold_number is not None:
        return Equivalence(DIFFERENT, "hedge", "± names two values")
    if worker is None:
        from rlvr_gym.verifiers.math.budget import shared_worker

        worker = shared_worker(WORKER_TARGET)
    outcome = worker.call(gold_norm, pred_norm, precision, timeout=timeout)  # type: ignore[attr-defined]
    if outcome.status == "timeout":
        return Equivalence(
            TIMEOUT, "symbolic", f"no answer within {timeout:g} s {outcome.value or ''}".strip()
        )
    if outcome.status == "memory":
        return Equivalence(TOO_LARGE, "symbolic", "memory budget exceeded")
    if outcome.status != "ok":
        return Equivalence(ERROR, "symbolic", f"worker {outcome.status}: {outcome.value or ''}".strip())
    status, why = outcome.value
    return Equivalence(status, "symbolic", why)


__all__ = ["Equivalence", "check"]
