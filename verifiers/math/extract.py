"""Find the final answer a completion commits to.

Looks, in order of how explicit the commitment is: the last ``<answer>...</answer>``, the last
``\\boxed{...}`` (nested braces, scanned in linear time), GSM8K's ``#### x``, "the (final)
answer is x", a completion that is only the answer, and, when asked, the last number.
"""

from __future__ import annotations

import re
from collections import deque

MAX_ANSWER_CHARS = 500
"""Longer extractions are not answers; later steps refuse them as ``bad_format``."""

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BOXED_SPACE = re.compile(r"\\boxed +([^\s$]+)")
_HASHES = re.compile(r"####\s*([^\n]*)")
_SAYS = re.compile(r"answer(?:\*\*)?\s*(?:is|:|=)\s*:?\s*([^\n]*)", re.IGNORECASE)
"""Catches "the (final) answer is x" and "Answer: x"; starting at the literal keeps the scan fast."""
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def last_tagged(text: str, tag: str) -> str | None:
    """Contents of the last ``<tag>...</tag>`` (case-insensitive), found in linear time.

    A regex like ``<answer>(.*?)</answer>`` rescans the rest of the text from every opening
    tag, which is quadratic on a completion of many unclosed tags.
    """
    close = _last(re.compile(rf"</{re.escape(tag)}>", re.IGNORECASE), text, len(text))
    if close is None:
        return None
    opening = _last(re.compile(rf"<{re.escape(tag)}>", re.IGNORECASE), text, close.start())
    if opening is None:
        return None
    return text[opening.end() : close.start()]


def _last(pattern: re.Pattern[str], text: str, end: int) -> re.Match[str] | None:
    """The last match before ``end`` (one left-to-right scan, no backtracking from the end)."""
    last = deque(pattern.finditer(text, 0, end), maxlen=1)
    return last[0] if last else None


def find_boxed(text: str) -> str | None:
    """Contents of the last ``\\boxed{...}`` with balanced braces, or ``None`` (unbalanced too)."""
    starts = [m.end() for m in _BOXED.finditer(text)]
    if not starts:
        match = _last(_BOXED_SPACE, text, len(text))
        return match.group(1) if match else None
    start = starts[-1]
    depth = 1
    for position in range(start, len(text)):
        char = text[position]
        if char == "{" and text[position - 1] != "\\":
            depth += 1
        elif char == "}" and text[position - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[start:position]
    return None


def _sentence(rest: str) -> str:
    """The answer part of "the answer is X. Because ..." : up to a sentence end."""
    rest = rest.strip()[: MAX_ANSWER_CHARS + 1]  # a longer "sentence" is refused as too long anyway
    match = re.match(r"(.*?)(?:\.\s+[A-Z]|\.$|$)", rest)
    return (match.group(1) if match else rest).strip().rstrip(".").strip()


def extract_answer(text: str, *, last_number_fallback: bool = False) -> str | None:
    """The answer string ``text`` commits to, or ``None`` when it commits to none."""
    inner = last_tagged(text, "answer")
    if inner is not None:
        inner = inner.strip()
        return find_boxed(inner) or inner
    boxed = find_boxed(text)
    if boxed is not None:
        return boxed.strip()
    hashes = _HASHES.findall(text)
    if hashes:
        return hashes[-1].strip()
    said = _SAYS.findall(text)
    if said:
        return _sentence(said[-1])
    bare = text.strip()
    if bare and "\n" not in bare and len(bare) <= 100:
        return bare
    if last_number_fallback:
        numbers = _NUMBER.findall(text)
        if numbers:
            return numbers[-1].rstrip(",")
    return None
