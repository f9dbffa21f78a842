"""Many sessions' steps, scored as batches: the batch is the unit of scoring.

Every concurrent ``step`` of a single-step env lands in one queue; a single consumer drains
whatever is waiting (up to ``max_batch`` items) into one :class:`~rlvr_gym.backends.scoring.Scorer`
call, so a thousand sessions cost a few ``verify_batch`` calls, not a thousand — and a remote
scorer (``--scoring ray``) ships them whole. While one batch is scored the next one gathers;
no timer is involved, so a lone request is scored at once.

The queue is bounded (``max_pending`` items): past it a request is refused with
:class:`ServerBusyError` instead of growing memory without limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlvr_gym.backends.scoring import Scorer
from rlvr_gym.error import (
    InvalidArgumentError,
    ServerBusyError,  # noqa: F401 - defined with the whole tree
)
from rlvr_gym.verifiers import Task, Verdict

logger = logging.getLogger("rlvr_gym.backends")


@dataclass(slots=True)
class _Request:
    completions: Sequence[object]
    tasks: Sequence[Task]
    done: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Batcher:
    """Score ``(completions, tasks)`` requests of one env through ``scorer``, many per batch."""

    def __init__(
        self, scorer: Scorer, *, max_batch: int = 256, max_pending: int = 8192, timeout_s: float | None = None
    ) -> None:
        self.scorer = scorer
        self.max_batch = max_batch
        self.max_pending = max_pending
        self.timeout_s = timeout_s
        self.pending = 0
        self.batches = 0
        self._queue: asyncio.Queue[_Request] | None = None
        self._consumer: asyncio.Task | None = None

    async def score(self, completions: Sequence[object], tasks: Sequence[Task]) -> list[Verdict | None]:
        """Verdicts for the pairs, in order (``None``: left unscored by the scorer's budget)."""
        if len(completions) != len(tasks):
            raise InvalidArgumentError(f"{len(completions)} completions but {len(tasks)} tasks")
        if not completions:
            return []
        if self.pending + len(completions) > self.max_pending:
            raise ServerBusyError(
                f"{self.pending} items are already waiting to be scored (limit {self.max_pending}); retry later"
            )
        queue = self._queue
        if queue is None or self._consumer is None or self._consumer.done():
            queue = self._queue = asyncio.Queue()
            self._consumer = asyncio.get_running_loop().create_task(
                self._consume(queue), name="rlvr-gym-scoring"
            )
        request = _Request(completions, tasks)
        self.pending += len(completions)
        queue.put_nowait(request)
        try:
            return await asyncio.shield(request.done)  # a caller that goes away does not cancel others
        finally:
            self.pending -= len(completions)

    async def _consume(self, queue: asyncio.Queue[_Request]) -> None:
        while True:
            batch = [await queue.get()]
            size = len(batch[0].completions)
            while size < self.max_batch and not queue.empty():
                batch.append(queue.get_nowait())
                size += len(batch[-1].completions)
            completions = [c for request in batch for c in request.completions]
            tasks = [t for request in batch for t in request.tasks]
            try:
                verdicts = await self.scorer.ascore(completions, tasks, timeout_s=self.timeout_s)
            except Exception as exc:  # noqa: BLE001 - a scorer failure is ours: every caller hears of it
                logger.exception("scoring a batch of %d items failed", len(completions))
                for request in batch:
                    if not request.done.done():
                        request.done.set_exception(exc)
                continue
            self.batches += 1
            start = 0
            for request in batch:
                end = start + len(request.completions)
                if not request.done.done():
                    request.done.set_result(list(verdicts[start:end]))
                start = end

    async def aclose(self) -> None:
        """Stop the consumer (pending callers are cancelled)."""
        if self._consumer is not None:
            self._consumer.cancel()
            self._consumer = None


__all__ = ["Batcher", "ServerBusyError"]
