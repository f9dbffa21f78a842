"""Is a predicted answer the same as the gold one?

:func:`check` runs in the caller's process and settles what it can cheaply: equal normalised
strings, exact numbers (``fractions``), text answers, hedges. Only what remains goes to
:func:`verifiers.math.symbolic.compare_symbolic`, which parses both sides with our own grammar and compares them with
sympy (:mod:`verifiers.math.symbolic`), inside the budgeted worker of
:mod:`verifiers.math.budget`. The caller never imports sympy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from rlvr_gym.verifiers.math.exactness import decimal_places, rounded_match
from rlvr_gym.verifiers.math.normalize import decimal_comma, fast_number, is_hedged, normalize

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
_LABEL = re.compile(r"(?:\\?[A-Za-z]+(?:_\{?\w+\}?|')*|[\s|(),:\[\]{}])+")
"""A name, not a value: ``x``, ``(p,q)``, ``|AB|``, ``f(x)``, ``V_1:V_2`` (no digits but subscripts)."""
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
    """Why ``text`` (normalised) is cut off, or ``None``: decided here, never in the worker.

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


def last_side(pred: str) -> str:
    """The value an equation chain ends with: ``x = 5+5+1 = 11`` and ``(p,q)=(3,2)`` -> the last side.

    Only when every earlier side is a label (``x``, ``(p,q)``, ``|AB|``, ``f(x)``, ``V_1:V_2``) or
    plain arithmetic, so an equation that constrains a variable (``2x = 4``) stays whole.
    """
    if _INEQUALITY.search(pred):
        return pred
    *earlier, last = pred.split("=")
    if last.strip() and all(_ARITHMETIC.fullmatch(side) or _LABEL.fullmatch(side) for side in earlier):
        return last.strip()
    return pred


def _is_words(text: str) -> bool:
    return bool(_WORDS.fullmatch(text)) and len(text) > 1


def _is_several(norm: str) -> bool:
    """Gold names several values (a top-level comma list or ``\\pm``): "or"/"and" then list them."""
    if "\\pm" in norm or "\\mp" in norm:
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


def numbers_equal(gold: str, pred: str, gold_value: Fraction, pred_value: Fraction) -> bool:
    """Exact equality, or the documented decimal rule of :mod:`verifiers.math.exactness`.

    ``gold``/``pred`` are the normalised strings (their written decimal places matter).
    """
    if gold_value == pred_value:
        return True
    pred_places, gold_places = decimal_places(pred), decimal_places(gold)
    if pred_places is not None and gold_places is None:
        return rounded_match(gold_value, pred_value, pred_places)
    if gold_places is not None and pred_places is None:
        return rounded_match(pred_value, gold_value, gold_places)
    return False


def _percent_equal(
    gold_raw: str, pred_raw: str, gold: str, pred: str, values: tuple[Fraction, Fraction]
) -> bool:
    """``15\\%`` is the number 15 and also the fraction 0.15: either reading passes.

    So ``15\\%`` matches gold ``15`` and gold ``0.15``; a bare ``0.15`` matches gold
    ``15\\%`` but not gold ``15`` (no percent sign on either side: no conversion).
    """
    gold_value, pred_value = values
    if _PERCENT_SIGN.search(pred_raw) and numbers_equal(gold, pred, gold_value, pred_value / 100):
        return True
    return bool(_PERCENT_SIGN.search(gold_raw)) and numbers_equal(gold, pred, gold_value / 100, pred_value)


def check(gold: str, pred: str, *, timeout: float, worker: object | None = None) -> Equivalence:
    """Compare ``pred`` with ``gold``: fast paths here, the rest in ``worker`` under ``timeout``.

    ``worker`` is a :class:`verifiers.math.budget.Worker` (the shared one when ``None``).
    """
    gold_norm, pred_norm = normalize(gold), normalize(pred)
    if is_hedged(pred) and not is_hedged(gold) and not _is_several(gold_norm):
        return Equivalence(DIFFERENT, "hedge", "the answer names more than one value")
    if "=" in pred_norm and "=" not in gold_norm:
        pred_norm = last_side(pred_norm)
    if not pred_norm:
        return Equivalence(INVALID, "string", "empty answer")
    if gold_norm == pred_norm:
        return Equivalence(EQUAL, "string")
    if len(pred_norm) > MAX_NORMALIZED_CHARS:
        return Equivalence(INVALID, "string", f"answer longer than {MAX_NORMALIZED_CHARS} characters")
    gold_number, pred_number = fast_number(gold_norm), fast_number(pred_norm)
    if gold_number is not None and pred_number is None:
        pointed = decimal_comma(pred_norm)
        if pointed is not None:
            pred_norm, pred_number = pointed, fast_number(pointed)
    if gold_number is not None and pred_number is not None:
        same = numbers_equal(gold_norm, pred_norm, gold_number, pred_number) or _percent_equal(
            gold, pred, gold_norm, pred_norm, (gold_number, pred_number)
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
    outcome = worker.call(gold_norm, pred_norm, timeout=timeout)  # type: ignore[attr-defined]
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
