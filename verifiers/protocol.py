"""The verifier protocol and the one place where verifier bugs are caught and surfaced.

The batch is the unit of scoring: :func:`run_verifier_batch` hands a whole batch to a verifier that
offers ``verify_batch`` (a code verifier runs it on the sandbox pool in parallel; a remote scorer
ships it whole) and calls any other verifier item by item. Either way a verifier bug becomes
``error`` verdicts for the items it touched, never an exception out of a training step.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from rlvr_gym.error import InvalidArgumentError
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


@runtime_checkable
class BatchVerifier(Verifier, Protocol):
    """A verifier that also scores many completions at once, pairwise with their tasks.

    ``verify_batch`` receives texts only (non-text completions are answered before it is called)
    and returns one Verdict per pair, in order. It is the path every batch scorer takes
    (``env.verify_batch``, training rewards, eval, the audit) when a verifier offers it.
    """

    def verify_batch(self, completions: Sequence[str], tasks: Sequence[Task]) -> list[Verdict]: ...


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


def _name(verifier: object) -> str:
    return getattr(verifier, "__name__", type(verifier).__name__)


def _not_text(completion: object) -> Verdict:
    return Verdict.fail(Reason.BAD_FORMAT, why=f"completion is {type(completion).__name__}, not text")


def run_verifier(verifier: Verifier, completion: object, task: Task) -> Verdict:
    """Call ``verifier`` so that it cannot crash the caller.

    Non-text completions become ``bad_format``; an exception or a non-Verdict return value
    becomes ``reason="error"`` with the exception in ``details`` and a logged warning.
    """
    text = completion_text(completion)
    if text is None:
        return _not_text(completion)
    try:
        verdict = verifier(text, task)
    except Exception as exc:  # a verifier bug: surface it, never hide it as a plain 0
        return _bug(verifier, exc)
    return verdict if isinstance(verdict, Verdict) else _not_a_verdict(verifier, verdict)


def run_verifier_batch(
    verifier: Verifier, completions: Sequence[object], tasks: Sequence[Task]
) -> list[Verdict]:
    """Score ``completions`` against ``tasks`` pairwise, as one batch where ``verifier`` can.

    A verifier with ``verify_batch`` gets the text completions in one call; any other is called
    per item through :func:`run_verifier`. Non-text completions are ``bad_format`` either way. An
    exception out of ``verify_batch``, a result of the wrong length, or a non-Verdict in it makes
    ``error`` verdicts for the items concerned (the bug is logged), so a batch never raises.
    """
    if len(completions) != len(tasks):
        raise InvalidArgumentError(f"verify_batch got {len(completions)} completions for {len(tasks)} tasks")
    batch = getattr(verifier, "verify_batch", None)
    if not callable(batch):
        return [run_verifier(verifier, c, t) for c, t in zip(completions, tasks, strict=True)]
    verdicts: list[Verdict | None] = [None] * len(completions)
    texts: list[str] = []
    where: list[int] = []
    for index, completion in enumerate(completions):
        text = completion_text(completion)
        if text is None:
            verdicts[index] = _not_text(completion)
        else:
            texts.append(text)
            where.append(index)
    if texts:
        try:
            scored = list(batch(texts, [tasks[i] for i in where]))
        except Exception as exc:  # a verifier bug: every item of the batch is an error verdict
            scored = [_bug(verifier, exc)] * len(texts)
        if len(scored) != len(texts):
            error = f"verify_batch returned {len(scored)} verdicts for {len(texts)} completions"
            logger.warning("verifier %s: %s", _name(verifier), error)
            scored = [Verdict.fail(Reason.ERROR, error=error, verifier=_name(verifier))] * len(texts)
        for index, verdict in zip(where, scored, strict=True):
            verdicts[index] = verdict if isinstance(verdict, Verdict) else _not_a_verdict(verifier, verdict)
    return [v for v in verdicts if v is not None]


def _bug(verifier: object, exc: Exception) -> Verdict:
    logger.warning("verifier %s raised %s: %s", _name(verifier), type(exc).__name__, exc)
    return Verdict.fail(Reason.ERROR, error=f"{type(exc).__name__}: {exc}", verifier=_name(verifier))


def _not_a_verdict(verifier: object, value: object) -> Verdict:
    return Verdict.fail(
        Reason.ERROR, error=f"verifier returned {type(value).__name__}, not Verdict", verifier=_name(verifier)
    )
