"""Symbolic equivalence, run inside the budgeted worker process (never in the caller).

Both answers are parsed with our own grammar (:mod:`rlvr_gym.verifiers.math.parse`) and compared
structurally: relations (equations up to a constant factor), tuples in order, sets and bare
lists in any order, intervals with their open/closed ends, unions, matrices, and scalars by
``sympy.simplify`` of the difference, then numerically (exact numbers) or at random points
(expressions). ``±`` denotes a two-element set.
"""

from __future__ import annotations

import random
from fractions import Fraction

import sympy
from sympy.core.evalf import PrecisionExhausted
from sympy.core.function import AppliedUndef

from rlvr_gym.verifiers.math.exactness import MIN_PLACES, check_precision, decimal_places, rounded_match
from rlvr_gym.verifiers.math.parse import (
    PM,
    Interval,
    Items,
    Matrix,
    ParseError,
    Relation,
    TooLargeError,
    Union,
    is_finite_number,
    parse,
    written_decimals,
)

EQUAL, DIFFERENT, INVALID, TOO_LARGE = "equal", "different", "invalid", "too_large"
_EXACT_DIGITS = 300
"""Working digits sympy's ``evalf`` may use to certify a difference ``simplify`` left: it adapts
its precision to cancellation, so a true difference of ``1`` next to ``10^{20}\\pi`` shows, and
a difference it cannot resolve within these digits (a zero simplify missed) is counted as zero."""


_BIG = (sympy.Sum, sympy.Product, sympy.Integral)


def _constants_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Exact constants compare exactly: no relative tolerance (``10^{20}`` is not ``10^{20}+1``)."""
    if a.is_Rational and b.is_Rational:
        return bool(a == b)
    difference = sympy.simplify(a - b)
    if difference == 0:
        return True
    if difference.is_Rational or difference.has(AppliedUndef):  # x_1 - x_2: names, no value
        return False
    try:  # strict: sympy certifies a non-zero difference to 15 digits, or gives up
        value = sympy.N(difference, 15, maxn=_EXACT_DIGITS, strict=True)
    except PrecisionExhausted:
        # No certified difference within the digits allowed: a zero ``simplify`` missed, when
        # both sides also agree to 20 digits evaluated on their own (``\\sin(10^{100})`` vs 7 do not).
        first, second = (sympy.N(side, 30) for side in (a, b))
        return bool(abs(first - second) <= sympy.Float("1e-20", 30) * max(1, abs(first)))
    return bool(value == 0)


_DECIMALS: dict[sympy.Rational, int] = {}
"""Values written as decimals in the two answers being compared, with their places (this call's)."""
_PRECISION = [MIN_PLACES]


def _written_decimal_stands_for(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Inside tuples, intervals and matrices: a written decimal vs an exact real constant."""
    for written, exact in ((a, b), (b, a)):
        places = _DECIMALS.get(abs(written)) if written.is_Rational else None
        if places is None or not is_finite_number(exact) or not exact.is_real or exact in _DECIMALS:
            continue
        approximation = sympy.N(exact, places + 30)
        return rounded_match(
            Fraction(str(approximation)), Fraction(int(written.p), int(written.q)), places, _PRECISION[0]
        )
    return False


def _scalars_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    if a == b:
        return True
    if _written_decimal_stands_for(a, b):
        return True
    if a.has(sympy.oo, -sympy.oo) or b.has(sympy.oo, -sympy.oo):
        return False
    free = (a.free_symbols | b.free_symbols) - {PM}
    if not free:
        return _constants_equal(a, b)
    if sympy.simplify(a - b) == 0:
        return True
    rng = random.Random(0)
    whole = a.has(*_BIG) or b.has(*_BIG)  # a sum's bound takes whole values only
    for _ in range(3):  # exact values at rational points: x^{20}+1 differs from x^{20} everywhere
        point = {
            s: sympy.Integer(rng.randint(2, 12))
            if whole
            else sympy.Rational(rng.randint(2, 97), rng.randint(2, 13))
            for s in free
        }
        try:
            if not _constants_equal(a.subs(point), b.subs(point)):
                return False
        except (TypeError, ValueError, ZeroDivisionError):
            return False
    return True


def _decimal_stands_for(exact_text: str, decimal_text: str, precision: int = MIN_PLACES) -> bool | None:
    """The rule of :mod:`rlvr_gym.verifiers.math.exactness` for a written decimal vs an exact constant.

    ``None`` when it does not apply (neither side a lone decimal, or the other not a constant).
    """
    places = decimal_places(decimal_text)
    if places is None or decimal_places(exact_text) is not None:
        return None
    try:
        exact = parse(exact_text)
    except ParseError:
        return None
    if not is_finite_number(exact) or not exact.is_real:
        return None
    approximation = sympy.N(exact, places + 30)
    return rounded_match(Fraction(str(approximation)), Fraction(decimal_text), places, precision)


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


def _distinct(items: tuple) -> tuple:
    """A solution listed twice is one solution: ``(3,17), (3,17)`` is ``{(3,17)}``."""
    kept: list = []
    for item in items[:50]:
        if not any(same(item, other) for other in kept):
            kept.append(item)
    return (*kept, *items[50:])


def _match_unordered(left: tuple, right: tuple) -> bool:
    left, right = _distinct(left), _distinct(right)
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
            len(r) == len(s) and all(same(x, y) for x, y in zip(r, s, strict=True))
            for r, s in zip(a.rows, b.rows, strict=True)
        )
    if isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr):
        return _scalars_equal(a, b)
    return False


def compare_symbolic(gold: str, pred: str, precision: int = MIN_PLACES) -> list[str]:
    """Worker entry point: ``[status, why]`` for two normalized answers. Runs under the budget.

    ``precision``: the fewest decimal places a written decimal needs to stand for an exact value.
    """
    precision = check_precision(precision)
    for exact_text, decimal_text in ((gold, pred), (pred, gold)):
        try:
            rounded = _decimal_stands_for(exact_text, decimal_text, precision)
        except (TypeError, ValueError, ArithmeticError):
            rounded = None
        if rounded is not None:
            return [EQUAL, "a decimal of the exact value"] if rounded else [DIFFERENT, ""]
    try:
        gold_value = parse(gold)
    except ParseError as exc:
        return [DIFFERENT, f"gold is not math ({exc}); compared as text"]
    try:
        pred_value = parse(pred)
    except TooLargeError as exc:
        return [TOO_LARGE, str(exc)]
    except ParseError as exc:
        return [INVALID, str(exc)]
    except (TypeError, ValueError, ArithmeticError) as exc:  # sympy refused to build the value
        return [INVALID, f"not a well-formed value ({type(exc).__name__})"]
    _DECIMALS.clear()
    _DECIMALS.update(written_decimals(gold))
    _DECIMALS.update(written_decimals(pred))
    _PRECISION[0] = precision
    try:
        return [EQUAL, ""] if same(gold_value, pred_value) else [DIFFERENT, ""]
    except (TypeError, ValueError, ArithmeticError, AttributeError) as exc:
        return [DIFFERENT, f"sympy could not compare: {type(exc).__name__}"]
    finally:
        _DECIMALS.clear()


__all__ = ["compare_symbolic", "same"]
