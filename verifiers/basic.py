"""Simple verifiers: exact text match and exact number match, with plain answer extraction.

These need no sandbox: they only run regular expressions and ``decimal`` parsing on bounded
strings. Symbolic math equivalence lives in its own module with an out-of-process budget.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

from verifiers.protocol import Task
from verifiers.verdict import Reason, Verdict

MAX_ANSWER_CHARS = 200
"""Longer "answers" are not answers; refusing them keeps every later step cheap."""

_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_SAYS = re.compile(r"(?:final answer|answer)\s*(?:is|:|=)\s*([^\n]*)", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def extract_answer(text: str) -> str | None:
    """The answer a completion commits to, or ``None``.

    Looks, in order, for the last ``<answer>...</answer>``, the last "answer is X" /
    "answer: X" line, and a completion that is nothing but a short answer.
    """
    tagged = _TAG.findall(text)
    if tagged:
        return tagged[-1].strip()
    said = _SAYS.findall(text)
    if said:
        return said[-1].strip().rstrip(".").strip()
    bare = text.strip()
    if bare and "\n" not in bare and len(bare) <= MAX_ANSWER_CHARS:
        return bare
    return None


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
        gold = parse_number(str(task[self.answer_key]))
        if gold is None:
            raise ValueError(f"task[{self.answer_key!r}]={task[self.answer_key]!r} is not a number")
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


class NumberProximity:
    """Partial credit for numeric answers: ``1 / (1 + |answer - gold| / max(1, |gold|))``.

    Passes only on the exact number; a near miss earns more than a far one, which gives GRPO
    a signal in groups where no completion is exactly right yet.
    """

    def __init__(self, answer_key: str = "answer") -> None:
        self.answer_key = answer_key

    def __call__(self, completion: str, task: Task) -> Verdict:
        exact = NumberMatch(self.answer_key)(completion, task)
        if exact.passed or exact.reason is not Reason.WRONG_ANSWER:
            return exact
        gold = parse_number(str(task[self.answer_key]))
        value = parse_number(exact.answer or "")
        if gold is None or value is None:  # unreachable after NumberMatch's checks; kept as a wall
            return exact
        distance = abs(value - gold) / max(1, abs(gold))
        return Verdict.fail(Reason.WRONG_ANSWER, exact.answer, score=float(1 / (1 + distance)))

    def __repr__(self) -> str:
        return f"NumberProximity(answer_key={self.answer_key!r})"


class ExactMatch:
    """Passes when the extracted answer equals ``task[answer_key]`` after case/space folding."""

    def __init__(self, answer_key: str = "answer", *, case_sensitive: bool = False) -> None:
        self.answer_key = answer_key
        self.case_sensitive = case_sensitive

    def _fold(self, text: str) -> str:
        text = " ".join(unicodedata.normalize("NFKC", text).split())
        return text if self.case_sensitive else text.casefold()

    def __call__(self, completion: str, task: Task) -> Verdict:
        answer = extract_answer(completion)
        if answer is None:
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.fail(Reason.BAD_FORMAT, answer[:MAX_ANSWER_CHARS], why="answer too long")
        if self._fold(answer) == self._fold(str(task[self.answer_key])):
            return Verdict.correct(answer)
        return Verdict.fail(Reason.WRONG_ANSWER, answer)

    def __repr__(self) -> str:
        return f"ExactMatch(answer_key={self.answer_key!r}, case_sensitive={self.case_sensitive})"
