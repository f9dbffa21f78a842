"""The verifier protocol and the one place where verifier bugs are caught and surfaced."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from rlvr_gym.verifiers.verdict import Reason, Verdict

logger = logging.getLogger("rlvr_gym.verifiers")

Task = Mapping[str, Any]
"""One task row: JSON-like values (question, gold answer, tests, ...)."""

Completion = str | Sequence[Mapping[str, Any]]
"""Model output: plain text, or chat messages whose last assistant turn is the answer."""


@runtime_checkable
class Verifier(Protocol):
    """Anything callable as ``verifier(completion, task) -> Verdict``.

    A verifier never raises on model output and never hangs: odd input earns a Verdict with a
    reason. Exceptions mean a verifier *bug*; :func:`run_verifier` turns them into
    ``reason="error"`` verdicts that trainers count, rather than a silent zero.
    """

    def __call__(self, completion: str, task: Task) -> Verdict: ...


def completion_text(completion: object) -> str | None:
    """The text of a completion given as a string or as chat messages (TRL's conversational form).

    Returns ``None`` when the value holds no text at all, so callers can answer ``bad_format``.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and not isinstance(completion, bytes | bytearray):
        for message in reversed(completion):
            if isinstance(message, Mapping) and message.get("role", "assistant") == "assistant":
                content = message.get("content")
                return content if isinstance(content, str) else None
    return None


def run_verifier(verifier: Verifier, completion: object, task: Task) -> Verdict:
    """Call ``verifier`` so that it cannot crash the caller.

    Non-text completions become ``bad_format``; an exception or a non-Verdict return value
    becomes ``reason="error"`` with the exception in ``details`` and a logged warning.
    """
    text = completion_text(completion)
    if text is None:
        return Verdict.fail(Reason.BAD_FORMAT, why=f"completion is {type(completion).__name__}, not text")
    try:
        verdict = verifier(text, task)
    except Exception as exc:  # a verifier bug: surface it, never hide it as a plain 0
        name = getattr(verifier, "__name__", type(verifier).__name__)
        logger.warning("verifier %s raised %s: %s", name, type(exc).__name__, exc)
        return Verdict.fail(Reason.ERROR, error=f"{type(exc).__name__}: {exc}", verifier=name)
    if not isinstance(verdict, Verdict):
        name = getattr(verifier, "__name__", type(verifier).__name__)
        return Verdict.fail(
            Reason.ERROR, error=f"verifier returned {type(verdict).__name__}, not Verdict", verifier=name
        )
    return verdict
