"""Scorers: where an env's ``verify_batch`` runs for training rewards, eval and the audit.

``local`` (the default) scores on this host: the env's own sandbox pool and math worker, in a
worker process with a wall-clock budget per batch and per item. ``ray`` (``pip install
'rlvr-gym[ray]'``) ships batches to actors on the CPU nodes of a Ray cluster, each holding the env
(and so its sandbox pool and math worker) on its node — for runs whose GPU host has no CPUs to
spare for scoring.

Both return one entry per item, in order: a :class:`~rlvr_gym.verifiers.Verdict`, or ``None``
for an item that missed the batch's budget (left unscored, never zeroed). One hostile item costs
only itself: a completion longer than ``max_chars`` (:data:`MAX_SCORED_CHARS`) is ``bad_format``
before the env sees it (:func:`capped_verify_batch`), and an item whose checks run past the item
budget is its own ``timeout`` while its neighbours are scored (a verifier's regex holds the GIL,
so only a process can be stopped: one 10 MB completion froze the trainer 5-8 s past a 2 s budget,
and kept a Ray actor from the rest of its batch and the next). This package never imports Ray
unless ``ray`` is chosen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from rlvr_gym.error import InvalidArgumentError, RunFailedError
from rlvr_gym.verifiers import Reason, Verdict

if TYPE_CHECKING:
    from rlvr_gym.envs import Env
    from rlvr_gym.verifiers import Task

MAX_SCORED_CHARS = 1_000_000
"""A completion longer than this (characters; all message contents for chat completions) is
``bad_format`` without reaching the env's verifiers: no model writes a megabyte of answer, and
every verifier regex then runs on bounded input."""

ScoringName = Literal["local", "ray"]
Scoring = Literal["local", "ray"]
SCORING: tuple[str, ...] = get_args(Scoring)


class Scorer(Protocol):
    """Scores batches of one env; ``score`` blocks, ``ascore`` awaits, ``close`` frees workers."""

    name: str

    def score(
        self, completions: Sequence[object], tasks: Sequence[Task], *, timeout_s: float | None = None
    ) -> list[Verdict | None]: ...

    async def ascore(
        self, completions: Sequence[object], tasks: Sequence[Task], *, timeout_s: float | None = None
    ) -> list[Verdict | None]: ...

    def close(self) -> None: ...


def completion_chars(completion: object) -> int:
    """The characters of a completion: a string's length, or the sum over chat messages' contents."""
    if isinstance(completion, str):
        return len(completion)
    if isinstance(completion, Sequence) and not isinstance(completion, bytes | bytearray):
        return sum(
            len(m["content"])
            for m in completion
            if isinstance(m, Mapping) and isinstance(m.get("content"), str)
        )
    return 0


def check_max_chars(max_chars: object) -> int:
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise InvalidArgumentError(f"max_chars must be an integer >= 1, got {max_chars!r}")
    return max_chars


def oversized(chars: int, max_chars: int) -> Verdict:
    """The verdict of a completion of ``chars`` characters, over ``max_chars``: ``bad_format``."""
    return Verdict.fail(
        Reason.BAD_FORMAT, why=f"completion of {chars} characters, over the scorer's {max_chars}"
    )


def capped_verify_batch(
    env: Env,
    completions: Sequence[object],
    tasks: Sequence[Task],
    max_chars: int = MAX_SCORED_CHARS,
) -> list[Verdict]:
    """``env.verify_batch`` on the completions of at most ``max_chars``; each longer one is its own
    ``bad_format`` verdict, so it costs only itself (and no verifier's time)."""
    if len(completions) != len(tasks):
        raise InvalidArgumentError(f"verify_batch got {len(completions)} completions for {len(tasks)} tasks")
    sizes = [completion_chars(c) for c in completions]
    keep = [i for i, size in enumerate(sizes) if size <= max_chars]
    if len(keep) == len(completions):
        return env.verify_batch(completions, tasks)
    verdicts: list[Verdict] = [oversized(size, max_chars) for size in sizes]
    if keep:
        scored = env.verify_batch([completions[i] for i in keep], [tasks[i] for i in keep])
        for index, verdict in zip(keep, scored, strict=True):
            verdicts[index] = verdict
    return verdicts


class AwaitableScorer:
    """``ascore`` for scorers whose ``score`` blocks: run it in a thread, so a trainer's event
    loop can overlap scoring with other work (generation of the next batch, logging)."""

    async def ascore(
        self, completions: Sequence[object], tasks: Sequence[Task], *, timeout_s: float | None = None
    ) -> list[Verdict | None]:
        return await asyncio.to_thread(self.score, completions, tasks, timeout_s=timeout_s)  # type: ignore[attr-defined]


def scored_by(scorer: Scorer) -> Callable[[Sequence[object], Sequence[Task]], list[Verdict]]:
    """``scorer`` as a plain ``(completions, tasks) -> verdicts`` function, with no budget (every
    item is scored: what eval and the audit need); for :func:`rlvr_gym.envs.audit.audit` and eval."""

    def score(completions: Sequence[object], tasks: Sequence[Task]) -> list[Verdict]:
        verdicts = scorer.score(completions, tasks, timeout_s=None)
        missing = [i for i, v in enumerate(verdicts) if v is None]
        if missing:  # without a budget only a lost cluster leaves an item unscored
            raise RunFailedError(f"{scorer.name} scoring left {len(missing)} of {len(verdicts)} items unscored")
        return verdicts  # type: ignore[return-value]

    return score


def check_scoring(scoring: str, ray_address: str | None = None) -> None:
    """Refuse an unknown backend name, or an address given to a backend that takes none."""
    if scoring not in SCORING:
        raise InvalidArgumentError(f"unknown scorer {scoring!r} (--scoring); choose from {list(SCORING)}")
    if ray_address is not None and scoring != "ray":
        raise InvalidArgumentError(f"ray_address is for scoring='ray', not {scoring!r}")


def make_scorer(
    env: Env, scoring: str = "local", *, ray_address: str | None = None, **options: Any
) -> Scorer:
    """The scorer called ``scoring`` for ``env``.

    ``ray`` connects at once (``ray_address``: ``host:port`` of the head, ``auto``, or ``None``
    for ``RAY_ADDRESS`` / a local cluster started with ``ray start``), starts its actors and checks
    every node's sandbox walls, so a cluster that cannot be reached fails here with one line —
    before any model is loaded. ``options`` go to the backend's class.
    """
    check_scoring(scoring, ray_address)
    if scoring == "ray":
        from rlvr_gym.backends.scoring.ray import RayScorer

        return RayScorer(env, address=ray_address, **options)
    from rlvr_gym.backends.scoring.local import LocalScorer

    return LocalScorer(env, **options)


__all__ = [
    "MAX_SCORED_CHARS",
    "SCORING",
    "Scoring",
    "AwaitableScorer",
    "Scorer",
    "ScoringName",
    "capped_verify_batch",
    "check_scoring",
    "completion_chars",
    "make_scorer",
    "oversized",
    "scored_by",
]
