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

from rlvr_gym.verifiers.math.normalize import fast_number, is_hedged, normalize

EQUAL, DIFFERENT, INVALID, TOO_LARGE, TIMEOUT, ERROR = (
    "equal",
    "different",
    "invalid",
    "too_large",
    "timeout",
    "error",
)
MAX_NORMALIZED_CHARS = 400
TOLERANCE = Fraction(1, 10**9)
"""Relative tolerance for numbers; ``verifiers.math.symbolic`` uses the same (1e-9)."""
WORKER_TARGET = "rlvr_gym.verifiers.math.symbolic:compare_symbolic"

_WORDS = re.compile(r"[A-Za-z][A-Za-z ]+")
_HAS_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Equivalence:
    """The outcome: ``status`` (one of the module constants), how it was settled, and why."""

    status: str
    path: str
    why: str = ""


_ARITHMETIC = re.compile(r"[\d\s+\-*/().,^{}]+|\\?[a-zA-Z]")


def _result_of(pred: str) -> str:
    """``18+2=20`` -> ``20`` and ``x=20`` -> ``20``: the value a worked equation ends with.

    Only when everything left of the last ``=`` is plain arithmetic or a single variable, so a
    real equation answer ("y=2x+3") is left whole.
    """
    left, _, right = pred.rpartition("=")
    if right and all(_ARITHMETIC.fullmatch(part) for part in left.split("=")):
        return right
    return pred


def _is_words(text: str) -> bool:
    return bool(_WORDS.fullmatch(text)) and len(text) > 1


def check(gold: str, pred: str, *, timeout: float, worker: object | None = None) -> Equivalence:
    """Compare ``pred`` with ``gold``: fast paths here, the rest in ``worker`` under ``timeout``.

    ``worker`` is a :class:`verifiers.math.budget.Worker` (the shared one when ``None``).
    """
    if is_hedged(pred) and not is_hedged(gold):
        return Equivalence(DIFFERENT, "hedge", "the answer names more than one value")
    gold_norm, pred_norm = normalize(gold), normalize(pred)
    if "=" in pred_norm and "=" not in gold_norm:
        pred_norm = _result_of(pred_norm)
    if not pred_norm:
        return Equivalence(INVALID, "string", "empty answer")
    if gold_norm == pred_norm:
        return Equivalence(EQUAL, "string")
    if len(pred_norm) > MAX_NORMALIZED_CHARS:
        return Equivalence(INVALID, "string", f"answer longer than {MAX_NORMALIZED_CHARS} characters")
    gold_number, pred_number = fast_number(gold_norm), fast_number(pred_norm)
    if gold_number is not None and pred_number is not None:
        # The same relative tolerance as the symbolic path, so 0.3333333333333 means 1/3 on both.
        close = abs(gold_number - pred_number) <= TOLERANCE * max(Fraction(1), abs(gold_number))
        return Equivalence(EQUAL if close else DIFFERENT, "numeric")
    if ("\\" not in gold_norm and _is_words(gold_norm)) or (gold_number is not None and _is_words(pred_norm)):
        same_words = gold_norm.casefold() == pred_norm.casefold()
        return Equivalence(EQUAL if same_words else DIFFERENT, "text")
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
        return Equivalence(TIMEOUT, "symbolic", f"no answer within {timeout:g} s")
    if outcome.status == "memory":
        return Equivalence(TOO_LARGE, "symbolic", "memory budget exceeded")
    if outcome.status != "ok":
        return Equivalence(ERROR, "symbolic", f"worker {outcome.status}: {outcome.value or ''}".strip())
    status, why = outcome.value
    return Equivalence(status, "symbolic", why)


__all__ = ["Equivalence", "check"]
