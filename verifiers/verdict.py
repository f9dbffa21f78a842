"""The Verdict: what every verifier returns, so trainers can count reasons, not just scores."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rlvr_gym.error import InvalidArgumentError, InvalidTypeError
from rlvr_gym.verifiers.frozen import FrozenDict, freeze


class Reason(StrEnum):
    """Why a completion got its score. Short codes, so metrics can count them."""

    CORRECT = "correct"
    WRONG_ANSWER = "wrong_answer"
    NO_ANSWER = "no_answer"
    BAD_FORMAT = "bad_format"
    TIMEOUT = "timeout"
    UNSAFE = "unsafe"
    ERROR = "error"  # a verifier bug, never the model's fault: counted and surfaced


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of checking one completion against one task.

    ``score`` lies in [0, 1]; ``passed`` is True exactly when ``reason`` is ``correct``.
    ``answer`` is what the verifier extracted from the completion (``None`` if nothing);
    ``details`` carries verifier-specific facts (per-component scores, test counts, ...); it is
    frozen (nested dicts read-only, lists made tuples), so a verdict is immutable and still
    pickles and deep-copies.
    """

    score: float
    passed: bool
    reason: Reason | str
    answer: str | None = None
    details: Mapping[str, Any] = field(default_factory=FrozenDict)

    def __post_init__(self) -> None:
        if isinstance(self.score, bool) or not isinstance(self.score, int | float):
            raise InvalidTypeError(f"Verdict.score must be a float, got {type(self.score).__name__}")
        if not math.isfinite(self.score) or not 0.0 <= self.score <= 1.0:
            raise InvalidArgumentError(f"Verdict.score must be a finite number in [0, 1], got {self.score!r}")
        if not isinstance(self.passed, bool):
            raise InvalidTypeError(f"Verdict.passed must be a bool, got {type(self.passed).__name__}")
        try:
            reason = Reason(self.reason)
        except ValueError:
            known = ", ".join(r.value for r in Reason)
            raise InvalidArgumentError(f"Verdict.reason must be one of {known}; got {self.reason!r}") from None
        if self.passed != (reason is Reason.CORRECT):
            raise InvalidArgumentError(
                f"Verdict.passed={self.passed} contradicts reason={reason.value!r}: "
                "a verdict passes exactly when its reason is 'correct'"
            )
        if self.answer is not None and not isinstance(self.answer, str):
            raise InvalidTypeError(f"Verdict.answer must be a str or None, got {type(self.answer).__name__}")
        object.__setattr__(self, "score", float(self.score))
        object.__setattr__(self, "reason", reason)
        if not isinstance(self.details, Mapping):
            raise InvalidTypeError(f"Verdict.details must be a mapping, got {type(self.details).__name__}")
        object.__setattr__(self, "details", freeze(self.details))

    # Convenience constructors keep verifiers short and their intent obvious.
    @classmethod
    def correct(cls, answer: str | None = None, score: float = 1.0, **details: Any) -> Verdict:
        return cls(score, True, Reason.CORRECT, answer, details)

    @classmethod
    def fail(
        cls, reason: Reason | str, answer: str | None = None, score: float = 0.0, **details: Any
    ) -> Verdict:
        return cls(score, False, reason, answer, details)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """The verdict :meth:`to_dict` wrote (details as JSON holds them)."""
        return cls(data["score"], data["passed"], Reason(data["reason"]), data["answer"], data["details"])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (details that JSON cannot hold are rendered with ``repr``)."""
        return {
            "score": self.score,
            "passed": self.passed,
            "reason": self.reason.value,
            "answer": self.answer,
            "details": json.loads(json.dumps(dict(self.details), default=repr)),
        }
