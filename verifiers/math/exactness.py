"""When may a written decimal stand for an exact value? The one documented tolerance rule.

Exact values (integers, fractions, radicals, ``\\pi``...) compare exactly: ``10^{20}`` is not
``10^{20}+1`` and ``10^{-400}`` is not ``0``. A tolerance exists only for a *written decimal*
standing for an exact value whose decimal expansion does not stop within the digits written
(``0.333333`` for ``\\frac{1}{3}``, ``1.4142136`` for ``\\sqrt{2}``): the decimal must show at
least :data:`MIN_PLACES` places (as Math-Verify's ``float_rounding=6``) and be the value rounded
(within half a unit of its last place) or truncated to those places (so ``0.666667`` and
``0.666666`` pass for ``\\frac{2}{3}``; ``0.333``, ``3.14159``, ``0.666668`` and ``2.828428`` for
``2\\sqrt{2}`` do not). Two written decimals, or a decimal and a value whose expansion stops
(``\\frac{1}{8}`` vs ``0.13``), compare exactly.

``MathVerifier(precision=p)`` is the one knob: it lowers (or raises) :data:`MIN_PLACES` to ``p``
for users who accept coarser decimals (``precision=2``: ``0.33`` for ``\\frac{1}{3}``,
``2.6667`` for ``\\frac{8}{3}``, ``0.13`` for ``\\frac{1}{8}`` since 1/8 does not stop within
two places). The rule stays the same: rounded or truncated to the places written, never a
relative tolerance, and two written decimals still compare exactly.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from rlvr_gym.error import InvalidArgumentError

MIN_PLACES = 6
MAX_PRECISION = 30
"""``precision`` above this is no rule at all (every decimal written has fewer places)."""
_DECIMAL_LITERAL = re.compile(r"[+-]?\d*\.(\d+)")


def decimal_places(text: str) -> int | None:
    """Places after the point when ``text`` is one plain decimal literal (``-0.3333``), else None."""
    match = _DECIMAL_LITERAL.fullmatch(text)
    return len(match.group(1)) if match else None


def terminates_within(value: Fraction, places: int) -> bool:
    """True when ``value`` is exactly a decimal with at most ``places`` places."""
    return (value * 10**places).denominator == 1


def check_precision(precision: object) -> int:
    """``precision`` as an int in ``[1, MAX_PRECISION]``, else :class:`InvalidArgumentError`."""
    if isinstance(precision, bool) or not isinstance(precision, int) or not 1 <= precision <= MAX_PRECISION:
        raise InvalidArgumentError(
            f"precision must be an int in [1, {MAX_PRECISION}] decimal places, got {precision!r}"
        )
    return precision


def rounded_match(exact: Fraction, written: Fraction, places: int, min_places: int = MIN_PLACES) -> bool:
    """``written`` (a decimal of ``places`` places) stands for the non-terminating ``exact``.

    ``min_places`` is the fewest places that may stand for a value (the ``precision`` option).
    """
    if places < min_places or terminates_within(exact, places):
        return False
    unit = Fraction(1, 10**places)
    scaled = exact * 10**places
    truncated = Fraction(math.floor(scaled) if scaled >= 0 else math.ceil(scaled)) * unit
    return abs(exact - written) <= unit / 2 or written == truncated


__all__ = [
    "MAX_PRECISION",
    "MIN_PLACES",
    "check_precision",
    "decimal_places",
    "rounded_match",
    "terminates_within",
]
