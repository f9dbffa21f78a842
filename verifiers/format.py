"""Format verifiers: shape rewards (tags, integer answers, length, numeric closeness).

Each is a plain verifier ``(completion, task) -> Verdict``, meant to sit beside a correctness
verifier in a :class:`rlvr_gym.verifiers.Rubric` with a small weight, e.g.
``Rubric({"correct": MathVerifier(), "format": TagFormat()}, weights={"format": 0.2})``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.math.extract import MAX_ANSWER_CHARS, extract_answer
from rlvr_gym.verifiers.math.normalize import fast_number, normalize
from rlvr_gym.verifiers.protocol import Task
from rlvr_gym.verifiers.verdict import Reason, Verdict

_TAG_NAME = re.compile(r"[A-Za-z][\w-]*")
_INTEGER = re.compile(r"[+-]?\d+")


class TagFormat:
    """The completion uses ``<think>...</think><answer>...</answer>`` (or the given tags).

    ``strict``: the whole completion is exactly those blocks, in order, each once, with only
    whitespace between them. Soft (``strict=False``): each block appears once, in order, with
    anything around; partial credit is the fraction of well-formed blocks.
    """

    def __init__(self, tags: tuple[str, ...] = ("think", "answer"), *, strict: bool = True) -> None:
        if not tags or not all(isinstance(t, str) and _TAG_NAME.fullmatch(t) for t in tags):
            raise InvalidArgumentError(f"tags must be a non-empty tuple of tag names, got {tags!r}")
        self.tags = tuple(tags)
        self.strict = bool(strict)
        blocks = r"\s*".join(rf"<{t}>(?:(?!</?{t}>).)*</{t}>" for t in self.tags)
        self._strict = re.compile(rf"\s*{blocks}\s*", re.DOTALL)
        self._soft = re.compile(r".*?".join(rf"<{t}>(?:(?!</?{t}>).)*</{t}>" for t in self.tags), re.DOTALL)

    def __call__(self, completion: str, task: Task) -> Verdict:
        # Counting first keeps the regex linear: it only runs when each tag occurs exactly once.
        counts_ok = all(
            completion.count(f"<{t}>") == 1 and completion.count(f"</{t}>") == 1 for t in self.tags
        )
        if counts_ok:
            pattern = self._strict if self.strict else self._soft
            if (pattern.fullmatch if self.strict else pattern.search)(completion):
                return Verdict.correct()
        if self.strict:
            return Verdict.fail(
                Reason.BAD_FORMAT, why=f"expected exactly {''.join(f'<{t}>…</{t}>' for t in self.tags)}"
            )
        good = sum(
            1
            for t in self.tags
            if completion.count(f"<{t}>") == 1
            and completion.count(f"</{t}>") == 1
            and completion.index(f"<{t}>") < completion.index(f"</{t}>")
        )
        return Verdict.fail(
            Reason.BAD_FORMAT, score=0.5 * good / len(self.tags), why="tags missing, repeated or out of order"
        )

    def __repr__(self) -> str:
        return f"TagFormat(tags={self.tags!r}, strict={self.strict})"


class IntegerAnswer:
    """The extracted final answer is written as a plain integer (GSM8K answers are integers).

    Thousands separators and a currency sign are tolerated; ``18.0``, ``18/1`` and words are not.
    """

    def __init__(self, *, last_number_fallback: bool = False) -> None:
        self.last_number_fallback = bool(last_number_fallback)

    def __call__(self, completion: str, task: Task) -> Verdict:
        answer = extract_answer(completion, last_number_fallback=self.last_number_fallback)
        if answer is None or not answer.strip():
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.fail(Reason.BAD_FORMAT, answer[:80], why="answer too long")
        if _INTEGER.fullmatch(normalize(answer)) and "." not in answer:
            return Verdict.correct(answer)
        return Verdict.fail(Reason.BAD_FORMAT, answer, why="answer is not an integer")

    def __repr__(self) -> str:
        return f"IntegerAnswer(last_number_fallback={self.last_number_fallback})"


class LengthBand:
    """Full score for a completion of ``min_chars``..``max_chars`` characters (or words).

    Outside the band the score falls linearly to 0 over ``slack`` more (or fewer) units, so the
    reward nudges length instead of cutting it off.
    """

    def __init__(
        self, min_len: int = 0, max_len: int = 4000, *, unit: str = "chars", slack: int | None = None
    ) -> None:
        if unit not in ("chars", "words"):
            raise InvalidArgumentError(f"unit must be 'chars' or 'words', got {unit!r}")
        if not (isinstance(min_len, int) and isinstance(max_len, int)) or not 0 <= min_len <= max_len:
            raise InvalidArgumentError(f"need integers 0 <= min_len <= max_len, got {min_len!r}, {max_len!r}")
        slack = max(1, max_len // 2) if slack is None else slack
        if not isinstance(slack, int) or slack < 1:
            raise InvalidArgumentError(f"slack must be an integer >= 1, got {slack!r}")
        self.min_len, self.max_len, self.unit, self.slack = min_len, max_len, unit, slack

    def __call__(self, completion: str, task: Task) -> Verdict:
        length = len(completion) if self.unit == "chars" else len(completion.split())
        if self.min_len <= length <= self.max_len:
            return Verdict.correct(length=length)
        distance = self.min_len - length if length < self.min_len else length - self.max_len
        score = max(0.0, 1.0 - distance / self.slack)
        side = "short" if length < self.min_len else "long"
        return Verdict.fail(Reason.BAD_FORMAT, score=score, length=length, why=f"too {side}")

    def __repr__(self) -> str:
        return f"LengthBand({self.min_len}, {self.max_len}, unit={self.unit!r}, slack={self.slack})"


class NumericProximity:
    """Partial credit for numeric answers: the closer to the gold number, the higher the score.

    ``score = exp(-|pred - gold| / (scale * max(|gold|, 1)))``; exactly right is 1.0 and passes.
    Non-numeric answers score 0 (``bad_format``). Only plain numbers are compared (fast path).
    """

    def __init__(
        self, answer_key: str = "answer", *, scale: float = 0.1, last_number_fallback: bool = False
    ) -> None:
        if isinstance(scale, bool) or not isinstance(scale, int | float) or not 0 < scale < math.inf:
            raise InvalidArgumentError(f"scale must be a positive finite number, got {scale!r}")
        self.answer_key, self.scale, self.last_number_fallback = (
            answer_key,
            float(scale),
            bool(last_number_fallback),
        )

    def __call__(self, completion: str, task: Task) -> Verdict:
        gold = fast_number(normalize(str(task[self.answer_key])))
        if gold is None:
            raise InvalidArgumentError(
                f"task[{self.answer_key!r}]={task[self.answer_key]!r} is not a plain number"
            )
        answer = extract_answer(completion, last_number_fallback=self.last_number_fallback)
        if answer is None or not answer.strip():
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.fail(Reason.BAD_FORMAT, answer[:80], why="answer too long")
        pred = fast_number(normalize(answer))
        if pred is None:
            return Verdict.fail(Reason.BAD_FORMAT, answer, why="answer is not a plain number")
        if pred == gold:
            return Verdict.correct(answer)
        relative = abs(pred - gold) / max(abs(gold), Fraction(1))
        exponent = float(relative) / self.scale if relative < 10**6 else math.inf
        score = math.exp(-exponent) if exponent < 700 else 0.0
        return Verdict.fail(
            Reason.WRONG_ANSWER, answer, score=min(score, 0.999), distance=float(min(relative, 10**6))
        )

    def __repr__(self) -> str:
        return f"NumericProximity(answer_key={self.answer_key!r}, scale={self.scale:g})"
