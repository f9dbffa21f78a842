"""Rewrites of one answer form into another, on normalized strings, before any comparison.

Two families that name the same object in different notations:

- **labelled solution sets**: ``p=5,q=2;p=7,q=2`` and ``(p,q)=(5,2),(7,2)`` are the list of
  tuples ``(5,2),(7,2)``. A label seen again starts the next solution; every solution must name
  the same labels. The order inside a tuple is the order in which the labelled side first writes
  its labels (the gold's order when both sides are labelled, so labels match by name there).
- **inequalities as intervals**: ``-2 \\le x \\le 7`` is ``[-2,7]``, ``x > 3`` is ``(3,\\infty)``
  and ``x<-2,x>3`` ("x < -2 or x > 3") is ``(-\\infty,-2)\\cup(3,\\infty)``: open and closed ends
  follow the strict and non-strict signs. A one-sided bound is rewritten only when the other side
  is written as an interval (``x \\ge 5`` against ``x \\geq 5`` stays a relation, variable and all).

Everything here is regular expressions and linear scans on strings of at most a few hundred
characters (the caller bounds them); nothing is parsed or evaluated.
"""

from __future__ import annotations

import re

LABEL = re.compile(r"(?:\\?[A-Za-z]++(?:_\{?\w+\}?|')*+|[\s|(),:\[\]{}])++")  # possessive: linear time
"""A name, not a value: ``x``, ``(p,q)``, ``|AB|``, ``f(x)``, ``V_1:V_2`` (no digits but subscripts)."""
_NAME = re.compile(r"[A-Za-z](?:_\{?\w+\}?|')*|\\[A-Za-z]+")
"""One variable: ``p``, ``x_1``, ``a_{3}``, ``\\alpha`` (a solution's label)."""
_NAMES = re.compile(
    r"\(\s*((?:[A-Za-z](?:_\w+)?|\\[A-Za-z]+)(?:\s*,\s*(?:[A-Za-z](?:_\w+)?|\\[A-Za-z]+))+)\s*\)"
)
"""A tuple of names: ``(p,q)``, ``(x_1,x_2,x_3)``."""
MAX_SOLUTIONS = 50


def split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` characters outside brackets and braces (linear time).

    ``\\sum_{i=1}^{n} i`` holds an ``=`` inside braces: it is no equation and no label.
    """
    items, depth, start = [], 0, 0
    for position, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            items.append(text[start:position])
            start = position + 1
    return [*items, text[start:]]


Solutions = tuple[list[str], list[dict[str, str]]]


def _repeated_labels(items: list[str]) -> Solutions | None:
    """``p=5, q=2, p=7, q=2``: a label seen again in the current solution starts the next one."""
    order: list[str] = []
    solutions: list[dict[str, str]] = [{}]
    for item in items:
        sides = split_top(item, "=")
        if len(sides) != 2 or not _NAME.fullmatch(label := sides[0].strip()) or not sides[1].strip():
            return None
        if label in solutions[-1]:
            solutions.append({})
        solutions[-1][label] = sides[1].strip()
        if label not in order:
            order.append(label)
    if len(order) < 2 or len(solutions) < 2 or any(set(s) != set(order) for s in solutions):
        return None
    return order, solutions


def _labelled_tuples(items: list[str]) -> Solutions | None:
    """``(p,q)=(5,2),(7,2)``: one tuple of names, then tuples of values of the same length."""
    sides = split_top(items[0], "=")
    names = _NAMES.fullmatch(sides[0].strip()) if len(sides) == 2 else None
    if names is None:
        return None
    order = [name.strip() for name in names.group(1).split(",")]
    solutions = []
    for item in items:
        item_sides = split_top(item, "=")
        if len(item_sides) == 2 and item_sides[0].replace(" ", "") == sides[0].replace(" ", ""):
            item_sides = item_sides[1:]  # (p,q)=(5,2),(p,q)=(7,2)
        if len(item_sides) != 1:
            return None
        value = item_sides[0].strip()
        inner = value[1:-1] if value[:1] == "(" and value[-1:] == ")" else None
        parts = split_top(inner, ",") if inner is not None else []
        if len(parts) != len(order) or not all(part.strip() for part in parts):
            return None
        solutions.append(dict(zip(order, (part.strip() for part in parts), strict=True)))
    if len(order) != len(set(order)):
        return None
    return order, solutions


def solutions(items: list[str]) -> Solutions | None:
    """The labels (in written order) and the solutions an answer lists, or ``None``."""
    if not 2 <= len(items) <= MAX_SOLUTIONS * 10:
        return None
    return _repeated_labels(items) or _labelled_tuples(items)


def as_tuples(order: list[str], listed: list[dict[str, str]]) -> str:
    """The solutions as a list of tuples, positions in ``order``: ``(5,2),(7,2)``."""
    return ",".join("(" + ",".join(solution[label] for label in order) + ")" for solution in listed)


# ---- inequalities and intervals -------------------------------------------------------------
_LESS = r"<=|<|\\leq?(?![a-z])|\\lt(?![a-z])"
_MORE = r">=|>|\\geq?(?![a-z])|\\gt(?![a-z])"
_BOUND_TEXT = r"(?:\\(?!l[et]|g[et])|[^<>=|\\,])+?"
"""A bound: anything but a relation sign or a comma (``-\\frac{3}{2}``, ``\\sqrt{2}``, ``-\\infty``)."""
_VAR = r"[A-Za-z](?:\([A-Za-z]\))?"
_CHAIN = re.compile(
    rf"(?P<lo>{_BOUND_TEXT})\s*(?P<a>{_LESS})\s*(?P<var>{_VAR})\s*(?P<b>{_LESS})\s*(?P<hi>{_BOUND_TEXT})"
)
_CHAIN_DOWN = re.compile(
    rf"(?P<hi>{_BOUND_TEXT})\s*(?P<b>{_MORE})\s*(?P<var>{_VAR})\s*(?P<a>{_MORE})\s*(?P<lo>{_BOUND_TEXT})"
)
_VAR_FIRST = re.compile(rf"\s*(?P<var>{_VAR})\s*(?P<op>{_LESS}|{_MORE})\s*(?P<value>{_BOUND_TEXT})\s*")
_VALUE_FIRST = re.compile(rf"\s*(?P<value>{_BOUND_TEXT})\s*(?P<op>{_LESS}|{_MORE})\s*(?P<var>{_VAR})\s*")
_COMMANDS = re.compile(r"\\[A-Za-z]+")
_STRICT = ("<", ">", "\\lt", "\\gt")


def _constant(text: str) -> bool:
    """A bound names no variable (``\\frac{3}{2}``, ``-\\infty``, ``2\\sqrt{3}``)."""
    return bool(text.strip()) and re.search(r"[A-Za-z]", _COMMANDS.sub("", text)) is None


def _chain(text: str) -> tuple[str, str] | None:
    """``a < x \\le b`` -> ``("(a,b]", "x")``: the interval and its variable."""
    match = _CHAIN.fullmatch(text) or _CHAIN_DOWN.fullmatch(text)
    if match is None:
        return None
    left = "(" if match.group("a") in _STRICT else "["
    right = ")" if match.group("b") in _STRICT else "]"
    return f"{left}{match.group('lo').strip()},{match.group('hi').strip()}{right}", match.group("var")


def interval_of_chain(text: str) -> str:
    """``-793 < a < 10`` -> ``(-793,10)`` and ``0<f(x)\\le 1`` -> ``(0,1]``: a range is an interval."""
    chain = _chain(text)
    return chain[0] if chain else text


def _one_sided(text: str) -> tuple[str, str] | None:
    """``x > 3`` -> ``(3,\\infty)``, ``3 \\ge x`` -> ``(-\\infty,3]``; a bound with a variable in it: None."""
    for pattern, flip in ((_VAR_FIRST, False), (_VALUE_FIRST, True)):
        match = pattern.fullmatch(text)
        if match is None or not _constant(match.group("value")):
            continue
        op = match.group("op")
        above = re.fullmatch(_MORE, op) is not None
        if flip:
            above = not above
        value = match.group("value").strip()
        strict = op in _STRICT
        if above:
            return f"{'(' if strict else '['}{value},\\infty)", match.group("var")
        return f"(-\\infty,{value}{')' if strict else ']'}", match.group("var")
    return None


_SET_LIKE = re.compile(r"[\[(][^\[\]()]*,[^\[\]()]*[\])](?:\\cup[\[(][^\[\]()]*,[^\[\]()]*[\])])*")


def looks_like_interval(text: str) -> bool:
    """``[3,\\infty)``, ``(-\\infty,-2)\\cup(3,\\infty)``: written as intervals (no parsing)."""
    return _SET_LIKE.fullmatch(text) is not None


def intervals_of_bounds(text: str) -> str | None:
    """Bounds and ranges of one variable (``x<-2,x>3``) as a union of intervals, else ``None``.

    ``x > 3, y < 2`` is a system in two variables, not a union: ``None``.
    """
    items = split_top(text, ",")
    if len(items) > MAX_SOLUTIONS:
        return None
    parts, names = [], set()
    for item in items:
        bound = _chain(item) or _one_sided(item)
        if bound is None:
            return None
        parts.append(bound[0])
        names.add(bound[1])
    return "\\cup".join(parts) if len(names) == 1 else None


__all__ = [
    "LABEL",
    "as_tuples",
    "interval_of_chain",
    "intervals_of_bounds",
    "looks_like_interval",
    "solutions",
    "split_top",
]
