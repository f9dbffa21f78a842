"""Is a predicted answer the same as the gold one?

:func:`check` runs in the caller's process and settles what it can cheaply: equal normalised
strings, exact numbers (``fractions``), text answers, hedges. Only what remains goes to
:func:`compare_symbolic`, which parses both sides with our own grammar and compares them with
sympy, inside the budgeted worker of :mod:`verifiers.math.budget`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from fractions import Fraction

import sympy

from verifiers.math.normalize import fast_number, is_hedged, normalize
from verifiers.math.parse import PM, Interval, Items, Matrix, ParseError, Relation, TooLarge, Union, parse

EQUAL, DIFFERENT, INVALID, TOO_LARGE, TIMEOUT, ERROR = "equal", "different", "invalid", "too_large", "timeout", "error"
TOLERANCE = 1e-9
MAX_NORMALIZED_CHARS = 400
WORKER_TARGET = "verifiers.math.equivalence:compare_symbolic"

_WORDS = re.compile(r"[A-Za-z][A-Za-z ]+")
_HAS_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Equivalence:
    """The outcome: ``status`` (one of the module constants), how it was settled, and why."""

    status: str
    path: str
    why: str = ""


# ----- in the worker -------------------------------------------------------------------------
def _numeric_close(a: sympy.Expr, b: sympy.Expr) -> bool:
    difference = complex(sympy.N(a - b, 30))
    scale = max(1.0, abs(complex(sympy.N(a, 30))))
    return abs(difference) <= TOLERANCE * scale


def _scalars_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    if a == b:
        return True
    if a.has(sympy.oo, -sympy.oo) or b.has(sympy.oo, -sympy.oo):
        return False
    free = (a.free_symbols | b.free_symbols) - {PM}
    difference = sympy.simplify(a - b)
    if difference == 0:
        return True
    if not free:
        return _numeric_close(a, b)
    rng = random.Random(0)
    for _ in range(3):
        point = {s: sympy.Rational(rng.randint(2, 97), rng.randint(2, 13)) for s in free}
        try:
            if not _numeric_close(a.subs(point), b.subs(point)):
                return False
        except (TypeError, ValueError, ZeroDivisionError):
            return False
    return True


def _expand_pm(value: object) -> object:
    """``a ± b`` denotes the set {a + b, a - b}."""
    if isinstance(value, sympy.Expr) and value.has(PM):
        return Items("set", (value.subs(PM, 1), value.subs(PM, -1)))
    if isinstance(value, Items):
        items: list = []
        for item in value.items:
            expanded = _expand_pm(item)
            if isinstance(expanded, Items) and expanded.kind == "set" and isinstance(item, sympy.Expr):
                items.extend(expanded.items)
            else:
                items.append(expanded)
        return Items(value.kind, tuple(items))
    return value


def _match_unordered(left: tuple, right: tuple) -> bool:
    if len(left) != len(right):
        return False
    remaining = list(right)
    for item in left:
        for index, other in enumerate(remaining):
            if same(item, other):
                del remaining[index]
                break
        else:
            return False
    return True


def _relations_equal(a: Relation, b: Relation) -> bool:
    flipped = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
    if a.op != b.op and flipped.get(a.op) == b.op:
        b = Relation(a.op, b.rhs, b.lhs)
    if a.op != b.op:
        return False
    if a.lhs == b.lhs and _scalars_equal(a.rhs, b.rhs):
        return True
    if a.op not in ("=", "!="):
        return _scalars_equal(a.lhs - a.rhs, b.lhs - b.rhs)
    left, right = sympy.simplify(a.lhs - a.rhs), sympy.simplify(b.lhs - b.rhs)
    if left == 0 or right == 0:
        return left == right
    ratio = sympy.simplify(left / right)
    return bool(ratio.is_number and ratio != 0)


def same(a: object, b: object) -> bool:
    """Structural equivalence of two parsed answers (see the module docs for the rules)."""
    a, b = _expand_pm(a), _expand_pm(b)
    if isinstance(a, Relation) and isinstance(b, Relation):
        return _relations_equal(a, b)
    if isinstance(a, Relation) and a.op == "=" and isinstance(a.lhs, sympy.Symbol):
        return same(a.rhs, b)
    if isinstance(b, Relation) and b.op == "=" and isinstance(b.lhs, sympy.Symbol):
        return same(a, b.rhs)
    if isinstance(a, Interval) and isinstance(b, Items) and b.kind == "tuple" and len(b.items) == 2:
        a, b = b, a
    if isinstance(a, Items) and a.kind == "tuple" and len(a.items) == 2 and isinstance(b, Interval):
        return b.lo_open and b.hi_open and same(a.items[0], b.lo) and same(a.items[1], b.hi)
    if isinstance(a, Items) and isinstance(b, Items):
        if "set" in (a.kind, b.kind) or (a.kind == b.kind == "list"):
            return _match_unordered(a.items, b.items)
        return len(a.items) == len(b.items) and all(same(x, y) for x, y in zip(a.items, b.items, strict=True))
    if isinstance(a, Interval) and isinstance(b, Interval):
        return (a.lo_open, a.hi_open) == (b.lo_open, b.hi_open) and same(a.lo, b.lo) and same(a.hi, b.hi)
    if isinstance(a, Union) and isinstance(b, Union):
        return _match_unordered(a.parts, b.parts)
    if isinstance(a, Matrix) and isinstance(b, Matrix):
        return len(a.rows) == len(b.rows) and all(
            len(r) == len(s) and all(same(x, y) for x, y in zip(r, s, strict=True)) for r, s in zip(a.rows, b.rows, strict=True)
        )
    if isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr):
        return _scalars_equal(a, b)
    return False


def compare_symbolic(gold: str, pred: str) -> list[str]:
    """Worker entry point: ``[status, why]`` for two normalised answers. Runs under the budget."""
    try:
        gold_value = parse(gold)
    except ParseError as exc:
        return [DIFFERENT, f"gold is not math ({exc}); compared as text"]
    try:
        pred_value = parse(pred)
    except TooLarge as exc:
        return [TOO_LARGE, str(exc)]
    except ParseError as exc:
        return [INVALID, str(exc)]
    try:
        return [EQUAL, ""] if same(gold_value, pred_value) else [DIFFERENT, ""]
    except (TypeError, ValueError, ArithmeticError, AttributeError) as exc:
        return [DIFFERENT, f"sympy could not compare: {type(exc).__name__}"]


# ----- in the caller -------------------------------------------------------------------------
def _is_words(text: str) -> bool:
    return bool(_WORDS.fullmatch(text)) and len(text) > 1


def check(gold: str, pred: str, *, timeout: float, worker: object | None = None) -> Equivalence:
    """Compare ``pred`` with ``gold``: fast paths here, the rest in ``worker`` under ``timeout``.

    ``worker`` is a :class:`verifiers.math.budget.Worker` (the shared one when ``None``).
    """
    if is_hedged(pred) and not is_hedged(gold):
        return Equivalence(DIFFERENT, "hedge", "the answer names more than one value")
    gold_norm, pred_norm = normalize(gold), normalize(pred)
    if not pred_norm:
        return Equivalence(INVALID, "string", "empty answer")
    if gold_norm == pred_norm:
        return Equivalence(EQUAL, "string")
    if len(pred_norm) > MAX_NORMALIZED_CHARS:
        return Equivalence(INVALID, "string", f"answer longer than {MAX_NORMALIZED_CHARS} characters")
    gold_number, pred_number = fast_number(gold_norm), fast_number(pred_norm)
    if gold_number is not None and pred_number is not None:
        return Equivalence(EQUAL if gold_number == pred_number else DIFFERENT, "numeric")
    if ("\\" not in gold_norm and _is_words(gold_norm)) or (gold_number is not None and _is_words(pred_norm)):
        same_words = gold_norm.casefold() == pred_norm.casefold()
        return Equivalence(EQUAL if same_words else DIFFERENT, "text")
    if gold_number is not None and pred_number is None and not _HAS_DIGIT.search(pred_norm) and "\\" not in pred_norm:
        return Equivalence(DIFFERENT if pred_norm.isalpha() else INVALID, "numeric", "not a number")
    if ("\\pm" in pred_norm or "\\mp" in pred_norm) and "\\pm" not in gold_norm and gold_number is not None:
        return Equivalence(DIFFERENT, "hedge", "± names two values")
    if worker is None:
        from verifiers.math.budget import shared_worker

        worker = shared_worker(WORKER_TARGET)
    outcome = worker.call(gold_norm, pred_norm, timeout=timeout)  # type: ignore[attr-defined]
    if outcome.status == "timeout":
        return Equivalence(TIMEOUT, "symbolic", f"no answer within {timeout:g} s")
    if outcome.status == "memory":
        return Equivalence(TOO_LARGE, "symbolic", "memory budget exceeded")
    if outcome.status != "ok":
        return Equivalence(ERROR, "symbolic", f"worker {outcome.status}")
    status, why = outcome.value
    return Equivalence(status, "symbolic", why)


__all__ = ["Equivalence", "Fraction", "check", "compare_symbolic", "same"]
