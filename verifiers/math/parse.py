"""A whitelist tokenizer and recursive-descent parser from (normalized) LaTeX to sympy objects.

Model text never reaches ``eval``, ``sympify`` or ``parse_expr``: every token is matched by a
regular expression and every sympy object is built by a named constructor. Sizes are bounded
(tokens, nesting depth, digits, powers, factorials) so hostile input fails fast with
:class:`ParseError` / :class:`TooLargeError`; what still runs long is stopped by the worker budget.

The parse result is a sympy expression or one of the small containers below.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

import sympy

from rlvr_gym.error import InvalidArgumentError, ParseError, TooLargeError  # noqa: F401 - defined with the whole tree

MAX_TOKENS = 400
MAX_DEPTH = 40
MAX_DIGITS = 100
MAX_POWER_BITS = 20_000
MAX_SYMBOLIC_EXPONENT = 1_000
MAX_FACTORIAL = 500

PM = sympy.Symbol("_pm", positive=True)
"""Stands for ``±``: an expression holding it denotes two values (PM = 1 and PM = -1)."""


@dataclass(frozen=True)
class Relation:
    op: str
    lhs: sympy.Expr
    rhs: sympy.Expr


@dataclass(frozen=True)
class Items:
    """A parenthesised tuple (``ordered``), a ``\\{set\\}``, or a bare comma list."""

    kind: str  # "tuple" | "set" | "list"
    items: tuple


@dataclass(frozen=True)
class Interval:
    lo: sympy.Expr
    hi: sympy.Expr
    lo_open: bool
    hi_open: bool


@dataclass(frozen=True)
class Union:
    parts: tuple


@dataclass(frozen=True)
class Matrix:
    rows: tuple  # tuple of tuples of expressions


_TOKEN = re.compile(
    r"(?P<sub>_(?:\d+|[a-zA-Z](?![a-zA-Z0-9])))"
    r"|(?P<num>\d+(?:\.\d*)?|\.\d+)"
    r"|(?P<cmd>\\(?:[a-zA-Z]+|[{}|\\]))"
    r"|(?P<letter>[a-zA-Z])"
    r"|(?P<op>\*\*|<=|>=|!=|[-+*/:^_=<>(),\[\]{}|!&])"
    r"|(?P<space>\s+)"
)

_GREEK = {
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Xi",
    "Sigma",
    "Phi",
    "Psi",
    "Omega",
}
_FUNCTIONS = {
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "cot": sympy.cot,
    "sec": sympy.sec,
    "csc": sympy.csc,
    "arcsin": sympy.asin,
    "arccos": sympy.acos,
    "arctan": sympy.atan,
    "sinh": sympy.sinh,
    "cosh": sympy.cosh,
    "tanh": sympy.tanh,
    "ln": sympy.log,
    "log": sympy.log,
    "exp": sympy.exp,
}
_RELATIONS = {
    "=": "=",
    "<": "<",
    ">": ">",
    "<=": "<=",
    ">=": ">=",
    "!=": "!=",
    r"\le": "<=",
    r"\leq": "<=",
    r"\ge": ">=",
    r"\geq": ">=",
    r"\neq": "!=",
    r"\ne": "!=",
    r"\lt": "<",
    r"\gt": ">",
}
_TIMES = {"*", r"\cdot", r"\times"}
_DIVIDE = {"/", r"\div", ":"}
"""``7:32`` is a ratio: the number 7/32 (so ``14:64`` matches it too)."""
_FRAC = {r"\frac", r"\dfrac", r"\tfrac", r"\cfrac"}
_MATRIX_ENVS = {"pmatrix", "bmatrix", "matrix", "vmatrix", "smallmatrix", "array", "Bmatrix"}
_SKIP = {r"\,", r"\!", r"\;", r"\quad", r"\qquad", r"\left", r"\right", r"\displaystyle", r"\limits"}
_BIG = {r"\sum": sympy.Sum, r"\prod": sympy.Product, r"\int": sympy.Integral}
"""Big operators with limits: unevaluated, their bound variable renamed by nesting level, so two
sums compare equal when their bodies do (``\\sum_{i=1}^{n}(i+1)`` is ``\\sum_{k=1}^{n}(1+k)``)."""
MAX_BIG_OPERATORS = 8
MAX_TERMS = 10_000
"""A sum or product over more numeric terms than this is refused before sympy sees it (an infinite
sum is kept: its value is a limit, and two of them compare by their bodies)."""


def tokenize(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` tokens, or :class:`ParseError` at the first character outside the grammar."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ParseError(f"unexpected character {text[position]!r} at {position}")
        position = match.end()
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "space" or value in _SKIP:
            continue
        if kind == "num" and len(value) > MAX_DIGITS:
            raise TooLargeError(f"a number of {len(value)} digits")
        tokens.append((kind, value))
        if len(tokens) > MAX_TOKENS:
            raise ParseError(f"more than {MAX_TOKENS} tokens")
    return tokens


def _check_power(base: sympy.Expr, exponent: sympy.Expr) -> None:
    """Refuse powers whose exact value would be enormous, before sympy computes them."""
    if not (exponent.is_number and base.is_number):
        if exponent.is_Integer and abs(int(exponent)) > MAX_SYMBOLIC_EXPONENT:
            raise TooLargeError(f"symbolic power with exponent {exponent}")
        return
    if exponent.is_Rational:
        numerator = abs(int(exponent.p))
        magnitude = abs(base) if base.is_Rational else None
        if magnitude is not None and magnitude in (0, 1):
            return
        if base.is_Rational:
            bits = max(abs(int(base.p)).bit_length(), abs(int(base.q)).bit_length())
            if numerator * bits > MAX_POWER_BITS:
                raise TooLargeError(f"a power of about {numerator * bits} bits")
        elif numerator > MAX_SYMBOLIC_EXPONENT:
            raise TooLargeError(f"power with exponent {exponent}")


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.position = 0
        self.depth = 0
        self.end = len(tokens)  # lowered while an integral's body is read (up to its ``d x``)
        self.bound: list[str] = []  # the variables of the big operators being read, innermost last
        self.big_operators = 0

    # ----- token helpers ---------------------------------------------------------------------
    def peek(self, offset: int = 0) -> str | None:
        index = self.position + offset
        return self.tokens[index][1] if index < self.end else None

    def kind(self) -> str | None:
        return self.tokens[self.position][0] if self.position < self.end else None

    def take(self) -> str:
        if self.position >= self.end:
            raise ParseError("unexpected end of input")
        value = self.tokens[self.position][1]
        self.position += 1
        return value

    def accept(self, *values: str) -> str | None:
        if self.peek() in values:
            return self.take()
        return None

    def expect(self, value: str) -> None:
        got = self.peek()
        if got != value:
            raise ParseError(f"expected {value!r}, got {got!r}")
        self.position += 1

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError(f"nesting deeper than {MAX_DEPTH}")

    # ----- grammar ---------------------------------------------------------------------------
    def parse_top(self) -> object:
        items = [self.parse_union()]
        while self.accept(","):
            items.append(self.parse_union())
        if self.peek() is not None:
            raise ParseError(f"unexpected {self.peek()!r}")
        return items[0] if len(items) == 1 else Items("list", tuple(items))

    def parse_union(self) -> object:
        parts = [self.parse_relation()]
        while self.accept(r"\cup"):
            parts.append(self.parse_relation())
        return parts[0] if len(parts) == 1 else Union(tuple(parts))

    def parse_relation(self) -> object:
        lhs = self.parse_expr()
        if self.peek() == r"\in":
            self.take()
            return self.parse_relation()
        op = self.peek()
        if op in _RELATIONS:
            self.take()
            rhs = self.parse_expr()
            if isinstance(lhs, sympy.Expr) and isinstance(rhs, sympy.Expr):
                return Relation(_RELATIONS[op], lhs, rhs)
            raise ParseError("relations are between expressions")
        return lhs

    def parse_expr(self) -> object:
        self.enter()
        left = self.parse_term()
        while self.peek() in ("+", "-", r"\pm", r"\mp"):
            op = self.take()
            right = self.parse_term()
            if op in ("+", "-") and isinstance(left, Matrix) and isinstance(right, Matrix):
                left = _matrix_sum(left, right, 1 if op == "+" else -1)
                continue
            right = _scalar(right)
            left = _scalar(left)
            if op == "+":
                left = left + right
            elif op == "-":
                left = left - right
            else:
                left = left + (PM if op == r"\pm" else -PM) * right
        self.depth -= 1
        return left

    def starts_atom(self) -> bool:
        token, kind = self.peek(), self.kind()
        if token is None:
            return False
        if kind in ("num", "letter"):
            return True
        if (
            token in ("(", r"\{")
            or token in _FRAC
            or token in _BIG
            or token in (r"\sqrt", r"\pi", r"\infty", r"\begin")
        ):
            return True
        return kind == "cmd" and (token[1:] in _GREEK or token[1:] in _FUNCTIONS)

    def parse_term(self) -> object:
        left = self.parse_unary()
        while True:
            token = self.peek()
            if token in _TIMES or token in _DIVIDE:
                self.take()
                right = _scalar(self.parse_unary())
                left = _scalar(left)
                if token in _DIVIDE:
                    if right == 0:
                        raise ParseError("division by zero")
                    left = left / right
                else:
                    left = left * right
            elif self.starts_atom():
                right = self.parse_power()
                if isinstance(left, Matrix) and isinstance(right, Matrix):
                    left = _matrix_product(left, right)  # written side by side: the matrix product
                    continue
                left = _scalar(left) * _scalar(right)
            else:
                return left

    def parse_unary(self) -> object:
        token = self.peek()
        if token in ("-", "+", r"\pm", r"\mp"):
            self.take()
            self.enter()
            operand = _scalar(self.parse_unary())
            self.depth -= 1
            return {"-": -operand, "+": operand, r"\pm": PM * operand, r"\mp": -PM * operand}[token]
        return self.parse_power()

    def parse_power(self) -> object:
        base = self.parse_postfix()
        if self.accept("^", "**"):
            self.enter()
            if self.peek() == "{":
                exponent = _scalar(self.parse_group())
            elif self.peek() in ("-", "+"):
                exponent = _scalar(self.parse_unary())
            else:
                exponent = _scalar(self.parse_power())
            self.depth -= 1
            base = _scalar(base)
            _check_power(base, exponent)
            if base == 0 and exponent.is_number and exponent.is_negative:
                raise ParseError("division by zero")
            return sympy.Pow(base, exponent)
        return base

    def parse_postfix(self) -> object:
        letter = self.kind() == "letter" or (self.kind() == "cmd" and (self.peek() or "")[1:] in _GREEK)
        value = self.parse_atom()
        if letter and isinstance(value, sympy.Symbol) and (self.kind() == "sub" or self.peek() == "_"):
            value = sympy.Function(value.name)(self.parse_index())  # x_1, F_{n-k-1}: a function of its index
        while self.peek() == "!":
            self.take()
            value = _scalar(value)
            if not (value.is_Integer and 0 <= int(value) <= MAX_FACTORIAL):
                raise TooLargeError(f"factorial of {value}")
            value = sympy.factorial(value)
        if self.peek() == "_" or self.kind() == "sub":
            raise ParseError("subscripts (bases, indices) are compared as text")
        return value

    def parse_index(self) -> sympy.Expr:
        """A subscript: ``_{n-k-1}``, a whole number (``_10``: normalizing dropped its braces), or
        one letter standing alone (``_k``). ``_ab`` (from ``_{ab}``) is ambiguous: refused."""
        if self.kind() == "sub":
            index = self.take()[1:]
            return sympy.Integer(int(index)) if index.isdigit() else sympy.Symbol(index)
        self.expect("_")
        if self.peek() != "{":
            raise ParseError("an ambiguous subscript (compared as text)")
        self.enter()
        index = _scalar(self.parse_group())
        self.depth -= 1
        return index

    def parse_group(self) -> object:
        self.expect("{")
        self.enter()
        inner = self.parse_union()
        self.depth -= 1
        self.expect("}")
        return inner

    def parse_arg(self) -> sympy.Expr:
        """A TeX macro argument: ``{...}``, or one token (one *digit* of a number, as TeX does)."""
        token, kind = self.peek(), self.kind()
        if token == "{":
            return _scalar(self.parse_group())
        if kind == "num":
            if "." not in token and len(token) > 1:
                self.tokens[self.position] = ("num", token[1:])
                return sympy.Integer(int(token[0]))
            self.take()
            return _number(token)
        return _scalar(self.parse_atom())

    def parse_atom(self) -> object:
        token, kind = self.peek(), self.kind()
        if token is None:
            raise ParseError("unexpected end of input")
        if kind == "num":
            self.take()
            return _number(token)
        if kind == "letter":
            self.take()
            return sympy.Symbol(token) if token in self.bound else _LETTERS.get(token) or sympy.Symbol(token)
        if token in ("(", "["):
            return self.parse_bracketed()
        if token == "{":
            return self.parse_group()
        if token == r"\{":
            self.take()
            items = self.parse_items(r"\}")
            return Items("set", tuple(items))
        if token == "|":
            self.take()
            self.enter()
            inner = _scalar(self.parse_expr())
            self.depth -= 1
            self.expect("|")
            return sympy.Abs(inner)
        if token in _FRAC:
            self.take()
            self.enter()
            numerator, denominator = self.parse_arg(), self.parse_arg()
            self.depth -= 1
            if denominator == 0:
                raise ParseError("division by zero")
            return numerator / denominator
        if token == r"\sqrt":
            self.take()
            self.enter()
            index = None
            if self.accept("["):
                index = _scalar(self.parse_expr())
                self.expect("]")
            radicand = self.parse_arg()
            self.depth -= 1
            if index is None:
                return sympy.sqrt(radicand)
            if index == 0:
                raise ParseError("zeroth root")
            _check_power(radicand, 1 / index)
            return sympy.root(radicand, index)
        if token == r"\pi":
            self.take()
            return sympy.pi
        if token == r"\infty":
            self.take()
            return sympy.oo
        if token == r"\begin":
            return self.parse_matrix()
        if token in _BIG:
            return self.parse_big()
        if kind == "cmd" and token[1:] in _FUNCTIONS:
            return self.parse_function()
        if kind == "cmd" and token[1:] in _GREEK:
            self.take()
            return sympy.Symbol(token[1:])
        raise ParseError(f"unexpected {token!r}")

    def parse_big(self) -> sympy.Expr:
        """``\\sum_{i=1}^{n} body``, ``\\prod_{k=0}^{5} body``, ``\\int_{a}^{b} body \\, dx``.

        The body of a sum or product is the product term after the limits (``\\sum_{i} i^2 + 1``
        is the sum plus one, as in TeX); an integral's runs to its ``d x``. Indefinite integrals,
        sums over sets and limits with no upper bound are outside the grammar.
        """
        operator = self.take()
        self.big_operators += 1
        if self.big_operators > MAX_BIG_OPERATORS:
            raise ParseError(f"more than {MAX_BIG_OPERATORS} big operators")
        self.enter()
        if operator == r"\int":
            lo = self.parse_index() if self.kind() == "sub" else (self.expect("_") or self.parse_arg())
            var = None
        else:
            self.expect("_")
            braced = self.accept("{") is not None
            var = self.take()
            if not re.fullmatch(r"[a-zA-Z]|\\[a-zA-Z]+", var) or var[1:] in _FUNCTIONS:
                raise ParseError(f"{operator} needs a variable, got {var!r}")
            self.expect("=")
            lo = _scalar(self.parse_expr()) if braced else self.parse_arg()
            if braced:
                self.expect("}")
        self.expect("^")
        hi = self.parse_arg()
        if operator == r"\int":
            var, body = self.parse_integrand()
        else:
            self.bound.append(var.lstrip("\\"))
            body = _scalar(self.parse_term())
            self.bound.pop()
        self.depth -= 1
        span = hi - lo
        endless = span.has(sympy.oo, -sympy.oo)
        if (
            operator != r"\int"
            and span.is_number
            and (operator == r"\prod" if endless else abs(span) > MAX_TERMS)
        ):
            raise TooLargeError(f"{operator} over more than {MAX_TERMS} terms")
        level = sympy.Symbol(f"_b{len(self.bound)}")
        body = body.subs(sympy.Symbol(var.lstrip("\\")), level)
        return _BIG[operator](body, (level, lo, hi))

    def parse_integrand(self) -> tuple[str, sympy.Expr]:
        """The body of an integral up to its differential ``d x`` (the first at this bracket depth)."""
        depth, stop = 0, None
        for index in range(self.position, self.end - 1):
            kind, token = self.tokens[index]
            depth += token in ("(", "[", "{", r"\{") or -(token in (")", "]", "}", r"\}"))
            if depth == 0 and kind == "letter" and token == "d" and self.tokens[index + 1][0] == "letter":
                stop = index
                break
            if depth < 0:
                break
        if stop is None:
            raise ParseError("an integral without its d x")
        var = self.tokens[stop + 1][1]
        outer_end, self.end = self.end, stop
        self.bound.append(var)
        try:
            body = _scalar(self.parse_expr())
            if self.position != stop:
                raise ParseError(f"unexpected {self.peek()!r} in an integral")
        finally:
            self.end = outer_end
            self.bound.pop()
        self.position = stop + 2
        return var, body

    def parse_function(self) -> sympy.Expr:
        function = _FUNCTIONS[self.take()[1:]]
        power = None
        if self.accept("^"):
            power = self.parse_arg()
        self.enter()
        argument = _scalar(self.parse_atom() if self.peek() in ("(", "{") else self.parse_power())
        self.depth -= 1
        value = function(argument)
        if power is not None:
            _check_power(value, power)
            value = sympy.Pow(value, power)
        return value

    def parse_items(self, closer: str) -> list:
        self.enter()
        items = [] if self.peek() == closer else [self.parse_union()]
        while self.accept(","):
            items.append(self.parse_union())
        self.expect(closer)
        self.depth -= 1
        return items

    def parse_bracketed(self) -> object:
        opener = self.take()
        self.enter()
        items = [self.parse_union()]
        while self.accept(","):
            items.append(self.parse_union())
        closer = self.take() if self.peek() in (")", "]") else None
        self.depth -= 1
        if closer is None:
            raise ParseError(f"unclosed {opener!r}")
        if len(items) == 1:
            if opener + closer not in ("()", "[]"):
                raise ParseError("mismatched brackets")
            return items[0]
        if len(items) == 2 and opener + closer != "()":
            lo, hi = (_scalar(item) for item in items)
            return Interval(lo, hi, opener == "(", closer == ")")
        if opener + closer != "()" and opener + closer != "[]":
            raise ParseError("mismatched brackets")
        return Items("tuple", tuple(items))

    def parse_matrix(self) -> Matrix:
        self.expect(r"\begin")
        self.expect("{")
        name = ""
        while self.kind() == "letter":
            name += self.take()
        self.expect("}")
        if name not in _MATRIX_ENVS:
            raise ParseError(f"unknown environment {name!r}")
        if name == "array" and self.accept("{"):  # the column spec: {cc}, {c|c}, {rl}
            while self.peek() in ("c", "l", "r", "|"):
                self.take()
            self.expect("}")
        rows: list[tuple] = []
        row: list = []
        self.enter()
        while True:
            row.append(_scalar(self.parse_expr()))
            if self.accept("&"):
                continue
            if self.accept("\\\\"):
                rows.append(tuple(row))
                row = []
                if self.peek() == r"\end":
                    break
                continue
            break
        if row:
            rows.append(tuple(row))
        self.depth -= 1
        self.expect(r"\end")
        self.expect("{")
        while self.kind() == "letter":
            self.take()
        self.expect("}")
        if len({len(r) for r in rows}) != 1:
            raise ParseError("ragged matrix")
        return Matrix(tuple(rows))


_LETTERS = {"i": sympy.I, "e": sympy.E}
"""``i`` is the imaginary unit and ``e`` Euler's number (``\\mathrm{e}`` is normalized to ``e``)."""


def _number(token: str) -> sympy.Rational:
    """An exact sympy number from a digits token, via ``fractions`` (sympy never sees the string)."""
    value = Fraction(token.rstrip("."))
    return sympy.Rational(value.numerator, value.denominator)


def _matrix_sum(left: Matrix, right: Matrix, sign: int) -> Matrix:
    """``A + B`` and ``A - B`` entry by entry (exact: the entries are sympy expressions)."""
    if len(left.rows) != len(right.rows) or len(left.rows[0]) != len(right.rows[0]):
        raise ParseError("matrices of different shapes added")
    pairs = zip(left.rows, right.rows, strict=True)
    return Matrix(tuple(tuple(a + sign * b for a, b in zip(ra, rb, strict=True)) for ra, rb in pairs))


def _matrix_product(left: Matrix, right: Matrix) -> Matrix:
    """``AB``: rows of ``A`` times columns of ``B`` (exact)."""
    if len(left.rows[0]) != len(right.rows):
        raise ParseError("matrices of incompatible shapes multiplied")
    columns = list(zip(*right.rows, strict=True))
    return Matrix(
        tuple(
            tuple(sympy.Add(*(a * b for a, b in zip(row, col, strict=True))) for col in columns)
            for row in left.rows
        )
    )


def _scalar(value: object) -> sympy.Expr:
    if not isinstance(value, sympy.Expr):
        raise ParseError(f"{type(value).__name__} used where a number or expression belongs")
    if value.has(sympy.nan, sympy.zoo):
        raise ParseError("undefined value")
    return value


def parse(text: str) -> object:
    """The math object ``text`` denotes (see module docs), or :class:`ParseError`."""
    if not isinstance(text, str):
        raise ParseError("not text")
    tokens = tokenize(text)
    if not tokens:
        raise ParseError("empty")
    return _Parser(tokens).parse_top()


def written_decimals(text: str) -> dict[sympy.Rational, int]:
    """The decimals ``text`` writes (``0.33`` -> ``{33/100: 2}``): they may stand for exact values.

    A value written both as a decimal and exactly elsewhere keeps the most places seen.
    """
    found: dict[sympy.Rational, int] = {}
    try:
        tokens = tokenize(text)
    except ParseError:
        return found
    for kind, token in tokens:
        if kind == "num" and "." in token.rstrip("."):
            value = _number(token)
            found[value] = max(found.get(value, 0), len(token.partition(".")[2]))
    return found


def is_finite_number(value: object) -> bool:
    """A plain scalar with no symbols and no infinity (safe for numeric evaluation)."""
    return isinstance(value, sympy.Expr) and value.is_number and not value.has(sympy.oo, -sympy.oo, PM)


__all__ = [
    "PM",
    "Interval",
    "Items",
    "Matrix",
    "ParseError",
    "Relation",
    "TooLargeError",
    "Union",
    "parse",
    "tokenize",
    "written_decimals",
]
