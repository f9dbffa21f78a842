"""Normalization of answer strings, and the exact in-process number fast path.

Everything here is regular expressions and :class:`fractions.Fraction` on bounded strings, so it
is cheap and safe to run in the caller's process: the common GSM8K case never needs sympy.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

MAX_EXPONENT = 400
"""Largest |power of ten| the fast path accepts in scientific notation (1e999 is not a number)."""

_UNICODE = {
    "π": r"\pi",
    "∞": r"\infty",
    "·": "*",
    "×": "*",
    "÷": "/",
    "−": "-",
    "–": "-",
    "±": r"\pm",
    "∓": r"\mp",
    "√": r"\sqrt",
    "≤": r"\le",
    "≥": r"\ge",
    "≠": r"\neq",
    "°": "",
}
_DELIMITERS = ((r"\(", r"\)"), (r"\[", r"\]"), ("$$", "$$"), ("$", "$"))
_SPACING = re.compile(r"\\\\|\\left|\\right|\\[!,;:> ]|\\quad|\\qquad|\\displaystyle|~")
_APPROX = re.compile(r"\\approx|\\simeq|≈")
"""``\\simeq`` and ``≈`` are written ``\\approx`` (see ``equivalence.last_side``)."""
_DECIMAL_COMMA = re.compile(r"([+-]?)(?:(0),(\d+)|(\d+),(\d{1,2}|\d{4,}))")
_EURO_THOUSANDS = re.compile(r"([+-]?\d{1,3}(?:\.\d{3})+),(\d+)")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree")
_TEXT = re.compile(
    r"\\(?:text|textnormal|textbf|textit|textrm|textsf|mathrm|mathbf|mathit|mbox|operatorname)\s*"
    r"\{([^{}]*)\}(\^\{?\d\}?)?"
)
_EULER = re.compile(r"\\(?:mathrm|text|operatorname|mathit)\s*\{\s*e\s*\}")
"""``\\mathrm{e}`` is Euler's number, written upright: it becomes ``e`` (the parser's ``E``)."""
_CONNECTIVE = re.compile(
    r"\\(?:text|textnormal|mbox)\s*\{\s*(?:and|or)\s*\}|\s+(?:and|or)\s+|(?<=\))\s*(?:and|or)\s*(?=\()"
)
_THOUSANDS_MARK = re.compile(r"(?<=\d)(?:,\\!\s*|\s?\{\s*,\s*\}\s*)(?=\d{3})")
"""``11,\\! 111``, ``14{,}916`` and ``14 {, }916``: a comma written as a thousands separator on purpose."""
"""``1 \\text{ and } 2``, ``(7,11) or (11,7)``: a list of answers (a hedge when gold has one)."""
_PERCENT = re.compile(r"\\?%")
_SINGLE_COMMAND = re.compile(r"(?<!\\)\\[a-zA-Z]")
_DOUBLED_COMMAND = re.compile(r"\\\\(?=[a-zA-Z{}%$])")
_CURRENCY = re.compile(r"\\\$|\$|€|£|\\euro")
_UNIT_TAIL = re.compile(
    r"([+-]?[\d.,]*\d\.?)\s*(?:(?!pi\b|sqrt|e\b|i\b)[a-zA-Z][a-zA-Z .]*[a-zA-Z.]|\s(?:m|g|s|h|l|L))"
    r"(?:\^?\{?[23]\}?)?"
)
_IN_SET = re.compile(r"^[a-zA-Z]\s*\\in\s*")
_MIXED_SPACE = re.compile(r"^([+-]?)(\d+)\s+(\d+)\s*/\s*(\d+)$")
_MIXED_TEX = re.compile(r"^([+-]?)(\d+)\s*\\frac\s*\{?(\d+)\}?\s*\{?(\d+)\}?$")
_FRAC_DIGITS = re.compile(r"\\frac\s*(\d)\s*(\d)")
_FRAC_HALF = re.compile(r"\\frac\s*(\d)\s*\{|\\frac\s*(\{[^{}]*\})\s*(\d)")
_SQRT_DIGIT = re.compile(r"\\sqrt\s*(\d)")
_THOUSANDS = re.compile(r"[+-]?(?!0)\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_BASE_BRACES = re.compile(r"_\{(\w+)\}")
_SPACE = re.compile(r"(\\[a-zA-Z]+)?(?<!_[a-zA-Z])\s+(?=([a-zA-Z])?)")
"""Spaces go, but one after a one-letter subscript stays: ``F_k F_n`` is not ``F_{kF}``."""
_HEDGE = re.compile(r"\bor\b|\beither\b", re.IGNORECASE)

_DECIMAL = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)")
_SCIENTIFIC = re.compile(
    r"([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+)|\*10\^\{?([+-]?\d+)\}?|\\(?:times|cdot)10\^\{?([+-]?\d+)\}?)"
)
_SLASH = re.compile(r"([+-]?\d+)/(\d+)")
_TEX_FRAC = re.compile(r"([+-]?)\\frac\{([+-]?\d+)\}\{([+-]?\d+)\}")


def unescape_once(text: str) -> str:
    """``-2 \\\\le x \\\\le 7`` -> ``-2 \\le x \\le 7``: an answer copied from an escaped string.

    Only when *every* command is written with a doubled backslash and none with a single one: a
    real row break (``1 \\\\ 2``, ``\\\\ \\frac``) beside single-backslash commands stays as it is.
    """
    if "\\\\" not in text or _SINGLE_COMMAND.search(text.replace("\\\\", "  ")) is not None:
        return text
    if _DOUBLED_COMMAND.search(text) is None:
        return text
    return text.replace("\\\\", "\\")


def _squeeze(match: re.Match[str]) -> str:
    """Drop a space, except the one that ends a command before a letter (``\\cot x``)."""
    command = match.group(1) or ""
    return command + " " if command and match.group(2) else command


def is_hedged(answer: str) -> bool:
    """True for answers that commit to more than one value in words ("17 or 18")."""
    return bool(_HEDGE.search(answer))


def strip_delimiters(text: str) -> str:
    """Remove math delimiters (``$..$``, ``\\(..\\)``, ``\\[..\\]``) around the whole answer."""
    text = text.strip()
    changed = True
    while changed:
        changed = False
        for left, right in _DELIMITERS:
            if len(text) >= len(left) + len(right) and text.startswith(left) and text.endswith(right):
                text = text[len(left) : len(text) - len(right)].strip()
                changed = True
    return text


def strip_group(text: str) -> str:
    """``{42}`` -> ``42``: drop braces that enclose the whole answer as one group (linear time)."""
    partner: dict[int, int] = {}
    stack: list[int] = []
    for position, char in enumerate(text):
        if char == "{":
            stack.append(position)
        elif char == "}" and stack:
            partner[stack.pop()] = position
    depth = 0
    while depth < len(text) // 2 and text[depth] == "{" and partner.get(depth) == len(text) - 1 - depth:
        depth += 1
    return text[depth : len(text) - depth] if depth else text


def _drop_text(text: str) -> str:
    """``\\text{...}`` beside a value is a unit and goes (with its ``^2``: "15\\mbox{ cm}^2");
    an answer that is only text ("\\text{Evelyn}", "\\text{(B)}") is unwrapped."""
    without = _TEXT.sub("", text).strip()
    if re.search(r"\d", without):
        return without
    return _TEXT.sub(lambda m: m.group(1), text)


def normalize(answer: str) -> str:
    """A canonical string for an answer: same value, same string, as often as cheaply possible.

    Removes delimiters, spacing commands, ``\\left``/``\\right``, degrees, ``%``, currency,
    ``\\text{}`` units and trailing unit words after a number, thousands separators and spaces;
    rewrites ``\\dfrac``/``\\tfrac`` to ``\\frac``, ``\\frac12`` to ``\\frac{1}{2}`` and mixed
    numbers (``1\\frac{4}{5}``, ``1 4/5``) to improper fractions.
    """
    text = unescape_once(unicodedata.normalize("NFKC", answer))
    for char, replacement in _UNICODE.items():
        if char in text:
            text = text.replace(char, replacement)
    text = strip_delimiters(text).rstrip(".").strip()
    text = strip_delimiters(text.strip("*").strip())  # Markdown bold, even when half of it was cut off
    text = text.replace(r"\dfrac", r"\frac").replace(r"\tfrac", r"\frac")
    text = _THOUSANDS_MARK.sub(",", text)
    text = _SPACING.sub(lambda m: m.group() if m.group() == "\\\\" else " ", text)
    text = _APPROX.sub(r"\\approx ", _EULER.sub("e", text)).replace(";", ",")
    text = _CONNECTIVE.sub(",", text)
    text = _DEGREES.sub("", text)
    if "\\" in text and "{" in text:
        text = _drop_text(text)
    text = _PERCENT.sub("", text)
    text = _CURRENCY.sub("", text)
    text = _IN_SET.sub("", text).strip()
    if unit := _UNIT_TAIL.fullmatch(text):  # "72 dollars", "5 apples": a number then words
        text = unit.group(1)
    text = text.strip().rstrip(".").strip()
    mixed = _MIXED_SPACE.fullmatch(text) or _MIXED_TEX.fullmatch(text)
    if mixed:
        sign, whole, num, den = mixed.groups()
        if int(den) != 0:
            value = int(whole) + Fraction(int(num), int(den))
            text = f"{sign}\\frac{{{value.numerator}}}{{{value.denominator}}}"
    text = _FRAC_DIGITS.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_HALF.sub(
        lambda m: f"\\frac{{{m.group(1)}}}{{" if m.group(1) else f"\\frac{m.group(2)}{{{m.group(3)}}}", text
    )
    text = _SQRT_DIGIT.sub(r"\\sqrt{\1}", text)
    grouped = _THOUSANDS.fullmatch(text.strip()) is not None  # before spaces go: "32, 349" is a list
    text = _SPACE.sub(_squeeze, text)
    if grouped:
        text = text.replace(",", "")
    text = _BASE_BRACES.sub(r"_\1", text)
    text = strip_group(text)
    single = re.fullmatch(r"\(([A-Za-z])\)", text)
    return single.group(1) if single else text


def fast_number(text: str) -> Fraction | None:
    """The exact value of a *normalized* plain number, or ``None`` (then sympy may still try).

    Accepts integers, decimals (``.35``), ``a/b``, ``\\frac{a}{b}`` and scientific notation
    with |exponent| <= ``MAX_EXPONENT``. Never NaN or infinity: those are not numbers here.
    """
    if len(text) > 120:
        return None
    if match := _DECIMAL.fullmatch(text):
        return Fraction(match.group(1) + match.group(2))
    if match := _SLASH.fullmatch(text):
        den = int(match.group(2))
        return Fraction(int(match.group(1)), den) if den else None
    if match := _TEX_FRAC.fullmatch(text):
        den = int(match.group(3))
        if not den:
            return None
        value = Fraction(int(match.group(2)), den)
        return -value if match.group(1) == "-" else value
    if match := _SCIENTIFIC.fullmatch(text):
        exponent = int(next(g for g in match.groups()[1:] if g is not None))
        if abs(exponent) > MAX_EXPONENT:
            return None
        return Fraction(match.group(1)) * Fraction(10) ** exponent
    return None


def decimal_comma(text: str, *, lists: bool = False) -> str | None:
    """A *normalized* number written with a decimal comma, rewritten with a point, or ``None``.

    Rules (the caller applies them only when the gold answer is one number, since ``1,2`` is
    otherwise a list): ``2,74`` and ``3,5`` (one or two digits after the comma), ``0,111``
    (a leading zero group cannot be a thousands group) and ``2,71828`` (four or more digits)
    are decimal commas; ``1.000,99`` is a dot-grouped thousands number with a decimal comma.
    ``1,234`` (exactly three digits after a non-zero group) stays a thousands separator: it is
    normalized to ``1234`` before this is asked. ``lists=True`` (a gold answer, where ``1,5`` may
    be the list 1 and 5) accepts only the unambiguous ``1.000,99``.
    """
    if match := _EURO_THOUSANDS.fullmatch(text):
        return match.group(1).replace(".", "") + "." + match.group(2)
    if not lists and (match := _DECIMAL_COMMA.fullmatch(text)):
        sign, zero, zero_digits, whole, digits = match.groups()
        return f"{sign}{zero or whole}.{zero_digits or digits}"
    return None
