"""Is an answer the question's own expression, copied back instead of worked out?

"Evaluate $(1+2i)6-3i$." has the gold ``6+9i``; the question's expression equals it by
construction, so an echo of the question (whose one line of math is "the answer") passed the
symbolic check with 1.0 (issue 34, the audit's ``echo`` family on MATH-500). An answer is the
work's result only if it is not a copy of the question's math: when, normalized, it is one of the
question's math spans, or it holds the whole question, it is refused — unless it is the gold as
written (a question may name its answer among its choices) or a lone symbol or word (``C``,
``Evelyn``: a choice named, not an expression left unworked). A number is not spared: "Express
$\\frac{3}{20}$ as a decimal." (gold ``0.15``) is not answered by ``\\frac{3}{20}``.
"""

from __future__ import annotations

import re

from rlvr_gym.verifiers.math.extract import math_spans
from rlvr_gym.verifiers.math.normalize import normalize

MAX_QUESTION_CHARS = 20_000
"""Longer questions are not scanned (none in the built-in data comes near; it bounds the cost)."""
_ATOM = re.compile(r"[A-Za-z]+|\\?[A-Za-z]+\{?[A-Za-z ]*\}?")
_SPACE = re.compile(r"\s+")


def _key(text: str) -> str:
    """A canonical, space-free form: copies that differ only in delimiters or spacing meet."""
    return _SPACE.sub("", normalize(text))


def _is_word(key: str) -> bool:
    """A lone symbol or word (``C``, ``Evelyn``): a choice named, not an expression left unworked."""
    return _ATOM.fullmatch(key) is not None


def copied_from_question(answer: str, question: str, gold: str) -> bool:
    """True when ``answer`` is one of ``question``'s math expressions (or the whole question) copied.

    Never true for the gold as written (normalized) or a lone symbol or word.
    """
    if len(question) > MAX_QUESTION_CHARS:
        return False
    key = _key(answer)
    if not key or key == _key(gold) or _is_word(key):
        return False
    whole = _SPACE.sub("", question)
    if len(whole) >= 8 and whole in _SPACE.sub("", answer):
        return True
    return any(_key(span) == key for span in math_spans(question))


__all__ = ["copied_from_question"]
