"""A whitelist parser for arithmetic expressions over integers: exact value, numbers used.

Model text never reaches ``eval``, ``ast`` or sympy here: a hand-written recursive-descent parser
reads integers, ``+ - * /`` (also ``×``, ``÷``, ``x`` between operands is *not* accepted) and
parentheses, and computes the value with :class:`fractions.Fraction`, so ``6 / 4 * 2`` is exactly
3. Everything is bounded before any work: the text length, the nesting depth, the count of
numbers and the digits of each, so no input costs more than linear time and small memory. There
is no power operator (``2 ** 9999999`` would be a memory bomb) and no unary minus (a Countdown
answer combines the given numbers; ``-3`` is not one of them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from rlvr_gym.error import (
    ExpressionError,  # noqa: F401 - defined with the whole tree
    )

MAX_EXPRESSION_CHARS = 300
"""Longer text is not an arithmetic answer; refused before tokenising."""
MAX_DEPTH = 32
"""Parentheses nested deeper than this are refused (the parser recurses per level)."""
MAX_NUMBERS = 32
MAX_DIGITS = 12

_TOKEN = re.compile(r"\s*(?:(\d+)|([-+*/×÷()]))")
_ALIASES = {"×": "*", "÷": "/", "−": "-", "–": "-"}


@dataclass(frozen=True)
class Evaluated:
    """An expression's exact value, the integers it used (in order of appearance) and the
    operators it applied (a task may allow only some)."""

    value: Fraction
    numbers: tuple[int, ...]
    operators: str = ""
    """The distinct operators applied, in sorted order (``'*+/'``)."""


def _tokens(text: str) -> list[str]:
    for alias, canonical in _ALIASES.items():
        text = text.replace(alias, canonical)
    tokens, position = [], 0
    stripped = text.rstrip()
    while position < len(stripped):
        match = _TOKEN.match(stripped, position)
        if match is None:
            shown = stripped[position : position + 10]
            raise ExpressionError(f"unexpected character at {position}: {shown!r}")
        number, symbol = match.groups()
        if number is not None and len(number) > MAX_DIGITS:
            raise ExpressionError(f"a number with more than {MAX_DIGITS} digits")
        tokens.append(number if number is not None else symbol)
        position = match.end()
    return tokens


class _Parser:
    """expr := term (('+'|'-') term)* ; term := atom (('*'|'/') atom)* ; atom := INT | '(' expr ')'"""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.position, self.numbers = tokens, 0, []
        self.operators: set[str] = set()

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ExpressionError("the expression ends too early")
        self.position += 1
        return token

    def expr(self, depth: int) -> Fraction:
        value = self.term(depth)
        while self.peek() in ("+", "-"):
            op, right = self.take(), self.term(depth)
            self.operators.add(op)
            value = value + right if op == "+" else value - right
        return value

    def term(self, depth: int) -> Fraction:
        value = self.atom(depth)
        while self.peek() in ("*", "/"):
            op, right = self.take(), self.atom(depth)
            self.operators.add(op)
            if op == "/" and right == 0:
                raise ExpressionError("division by zero")
            value = value * right if op == "*" else value / right
        return value

    def atom(self, depth: int) -> Fraction:
        token = self.take()
        if token == "(":
            if depth >= MAX_DEPTH:
                raise ExpressionError(f"parentheses nested deeper than {MAX_DEPTH}")
            value = self.expr(depth + 1)
            if self.take() != ")":
                raise ExpressionError("a '(' is not closed")
            return value
        if token.isdigit():
            self.numbers.append(int(token))
            if len(self.numbers) > MAX_NUMBERS:
                raise ExpressionError(f"more than {MAX_NUMBERS} numbers")
            return Fraction(int(token))
        raise ExpressionError(f"expected a number or '(', got {token!r}")


def evaluate(text: str) -> Evaluated:
    """The exact value of ``text`` and the integers in it; :class:`ExpressionError` if it is not
    an expression of integers, ``+ - * /`` and parentheses.

    >>> evaluate("(6 + 4) / 4 * 2")
    Evaluated(value=Fraction(5, 1), numbers=(6, 4, 4, 2), operators='*+/')
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expected text, got {type(text).__name__}")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"longer than {MAX_EXPRESSION_CHARS} characters")
    tokens = _tokens(text)
    if not tokens:
        raise ExpressionError("empty expression")
    parser = _Parser(tokens)
    value = parser.expr(0)
    if parser.position != len(tokens):
        raise ExpressionError(f"unexpected {tokens[parser.position]!r} after a complete expression")
    return Evaluated(value, tuple(parser.numbers), "".join(sorted(parser.operators)))


__all__ = ["MAX_DEPTH", "MAX_EXPRESSION_CHARS", "Evaluated", "ExpressionError", "evaluate"]
