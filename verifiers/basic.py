"""Simple verifiers: exact number match and exact text match.

No sandbox needed: the answer is found by the shared linear-time extractor and compared with
``decimal`` parsing or case folding. Symbolic equivalence is ``verifiers.math.MathVerifier``.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.math.extract import MAX_ANSWER_CHARS
from rlvr_gym.verifiers.math.extract import extract_answer as _extract_raw
from rlvr_gym.verifiers.protocol import Task
from rlvr_gym.verifiers.single_answer import SingleAnswer
from rlvr_gym.verifiers.verdict import Reason, Verdict

_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_EMPHASIS = re.compile(r"^(?:\*\*|__|\*|_|`)+|(?:\*\*|__|\*|_|`)+$")
_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))


def strip_markup(answer: str) -> str:
    """``answer`` without the Markdown emphasis and math delimiters around it.

    ``'** 3000'`` (from ``**Answer:** 3000``), ``'$3000$'``, ``'\\(3000\\)'`` and ``'**3000**'``
    all become ``'3000'``; the inside is left alone, so ``'$3$ or $4$'`` stays a hedge.
    """
    text = answer.strip()
    for _ in range(4):  # layers such as **$3000$** peel in a few rounds; bounded on purpose
        before = text
        text = _EMPHASIS.sub("", text).strip().removesuffix(".").strip()
        for left, right in _DELIMITERS:
            inner = text[len(left) : -len(right)] if len(text) > len(left) + len(right) else ""
            if text.startswith(left) and text.endswith(right) and left not in inner:
                text = inner.strip()
                break
        if text == before:
            break
    return text


def extract_answer(text: str, *, last_number_fallback: bool = False) -> str | None:
    """The answer ``text`` commits to (see ``verifiers.math.extract``), without markup around it."""
    answer = _extract_raw(text, last_number_fallback=last_number_fallback)
    return None if answer is None else strip_markup(answer)


def _short_line(completion: str) -> str | None:
    bare = strip_markup(completion)
    return bare if bare and "\n" not in bare and len(bare) <= 100 else None


def parse_number(answer: str) -> Decimal | None:
    """An exact Decimal for a plain number ("1,234", "-7", "3.50", "$12", "12."), else ``None``.

    Only digits, sign, one decimal point and well-formed thousands commas are accepted, so
    "17 or 18", "1e999", "nan" and "∞" are not numbers here.
    """
    candidate = unicodedata.normalize("NFKC", answer).strip().removeprefix("$").rstrip(".").strip()
    if not _NUMBER.fullmatch(candidate):
        return None
    try:
        return Decimal(candidate.replace(",", ""))
    except InvalidOperation:  # unreachable for the regex above; kept as a wall, not a path
        return None


class NumberMatch:
    """Passes when the extracted answer is the same number as ``task[answer_key]``."""

    def __init__(self, answer_key: str = "answer") -> None:
        self.answer_key = answer_key

    def __call__(self, completion: str, task: Task) -> Verdict:
        """Several different committed answers (a hedge) fail unless each is the gold."""
        return SingleAnswer(self._match)(completion, task)

    def _match(self, completion: str, task: Task) -> Verdict:
        gold = parse_number(str(task[self.answer_key]))
        if gold is None:
            raise InvalidArgumentError(f"task[{self.answer_key!r}]={task[self.answer_key]!r} is not a number")
        answer = extract_answer(completion)
        if answer is None:
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.fail(Reason.BAD_FORMAT, answer[:MAX_ANSWER_CHARS], why="answer too long")
        value = parse_number(answer)
        if value is None:
            return Verdict.fail(Reason.BAD_FORMAT, answer, why="answer is not a plain number")
        if value == gold:
            return Verdict.correct(answer)
        return Verdict.fail(Reason.WRONG_ANSWER, answer)

    def __repr__(self) -> str:
        return f"NumberMatch(answer_key={self.answer_key!r})"


class ExactMatch:
    """Passes when the extracted answer equals ``task[answer_key]`` after case/space folding."""

    def __init__(self, answer_key: str = "answer", *, case_sensitive: bool = False) -> None:
        self.answer_key = answer_key
        self.case_sensitive = case_sensitive

    def _fold(self, text: str) -> str:
        text = " ".join(unicodedata.normalize("NFKC", text).split())
        return text if self.case_sensitive else text.casefold()

    def __call__(self, completion: str, task: Task) -> Verdict:
        """Several different committed answers (a hedge) fail unless each is the gold."""
        return SingleAnswer(self._match)(completion, task)

    def _match(self, completion: str, task: Task) -> Verdict:
        # A text answer is often several words ("New York City"), which the math extractor reads
        # as prose; a completion that is one short line is taken whole.
        answer = extract_answer(completion) or _short_line(completion)
        if answer is None:
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.fail(Reason.BAD_FORMAT, answer[:MAX_ANSWER_CHARS], why="answer too long")
        if self._fold(answer) == self._fold(str(task[self.answer_key])):
            return Verdict.correct(answer)
        return Verdict.fail(Reason.WRONG_ANSWER, answer)

    def __repr__(self) -> str:
        return f"ExactMatch(answer_key={self.answer_key!r}, case_sensitive={self.case_sensitive})"
