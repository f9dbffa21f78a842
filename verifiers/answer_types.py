"""Equivalence by answer type: when the gold is a number, a yes/no or a list of numbers, we judge.

A peer's scorer is written for honest answers; under a policy it pays what it should not
(reasoning-gym 0.1.25: ``-8`` for ``8``, ``8 or 9`` in one tag, a sorted list off by one, any
non-empty answer where the gold is ``True``). Where the gold's type is one of these, the answer
must be one value of that type and equal to the gold — a plain number (``6``, ``6.0``, ``6,000``,
``$6$``, ``3.05e-05``), a bool (``true``/``false``/``yes``/``no``, case ignored), a flat list of numbers
(``[1, 2.5]`` or ``['1', '2.5']``, same order). Otherwise :func:`typed_match` returns ``None`` and
the caller falls back to the peer's own scorer. Nothing here evaluates text: numbers go through
:func:`~rlvr_gym.verifiers.basic.parse_number`'s whitelist, lists through a split on commas.
"""

from __future__ import annotations

import re
from decimal import Decimal

from rlvr_gym.verifiers.basic import parse_number, strip_markup

MAX_LIST_ITEMS = 1_000
"""A list gold longer than this is left to the peer (no answer type is inferred)."""

_BOOLS = {"true": True, "false": False, "yes": True, "no": False}
_SCIENTIFIC = re.compile(r"[+-]?\d+(?:\.\d+)?[eE][+-]?\d{1,3}")
"""``3.05e-05``: a bounded exponent only (Decimal keeps it exact and small)."""


def _bool(text: str) -> bool | None:
    return _BOOLS.get(strip_markup(text).strip().lower())


def _number(text: str) -> Decimal | None:
    bare = strip_markup(text)
    if _SCIENTIFIC.fullmatch(bare.strip()):
        return Decimal(bare.strip())
    return parse_number(bare)


def _numbers(text: str) -> list[Decimal] | None:
    """``[1, -2.5]`` / ``['1', '-2.5']`` as numbers (``None`` if it is not a flat list of them)."""
    body = strip_markup(text).strip()
    if not (body.startswith("[") and body.endswith("]")):
        return None
    inner = body[1:-1].strip()
    if not inner:
        return []
    items = inner.split(",")
    if len(items) > MAX_LIST_ITEMS:
        return None
    values = []
    for item in items:
        value = parse_number(item.strip().strip("'\"").strip())
        if value is None:
            return None
        values.append(value)
    return values


def answer_type(gold: str) -> str | None:
    """``"bool"``, ``"number"``, ``"numbers"`` (a flat list) or ``None`` (judged by the peer)."""
    if _bool(gold) is not None:
        return "bool"
    if _number(gold) is not None:
        return "number"
    if _numbers(gold) is not None:
        return "numbers"
    return None


def typed_match(answer: str, gold: str) -> bool | None:
    """Whether ``answer`` is the gold's value, judged by the gold's type; ``None`` where the type
    is not one we judge.

    >>> typed_match("-8", "8"), typed_match("8.0", "8"), typed_match("8 or 9", "8")
    (False, True, False)
    >>> typed_match("Yes", "True"), typed_match("[1, 2]", "['1', '2']"), typed_match("x", "abc")
    (True, True, None)
    """
    kind = answer_type(gold)
    if kind == "bool":
        return _bool(answer) == _bool(gold)
    if kind == "number":
        value = _number(answer)
        return value is not None and value == _number(gold)
    if kind == "numbers":
        values = _numbers(answer)
        return values is not None and values == _numbers(gold)
    return None


__all__ = ["answer_type", "typed_match"]
