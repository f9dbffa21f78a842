"""``local`` scoring: the env's ``verify_batch`` on this host, in a daemon thread with a budget.

The env's own sandbox pool and math worker do the work (the embedded default; no Ray import).
A verifier that hangs keeps its thread: the batch it was scoring is left unscored after one
budget, and the stuck thread is abandoned for a fresh one, so the next batch does not queue
behind it. A hang costs one budget once, not every later batch. A completion over ``max_chars``
never reaches the env (:func:`~rlvr_gym.backends.scoring.capped_verify_batch`): a verifier's regex
holds the GIL, and a 10 MB completion held it 5-8 s past a 2 s budget, the whole process frozen.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from rlvr_gym.backends.scoring import (
    MAX_SCORED_CHARS,
    AwaitableScorer,
    capped_verify_batch,
    check_max_chars,
)
from rlvr_gym.envs import SingleTurnEnv
from rlvr_gym.verifiers import Task, Verdict

logger = logging.getLogger("rlvr_gym.backends")


class DaemonWorker:
    """One daemon thread running submitted calls in order.

    Unlike ``ThreadPoolExecutor`` (whose threads the interpreter joins at exit), an abandoned
    worker stuck in a hung verifier cannot keep the process alive after training ends.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[concurrent.futures.Future, Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._run, name="verify", daemon=True).start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, call = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # handed to the waiting caller, never lost
                    future.set_exception(exc)

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((future, lambda: fn(*args)))
        return future

    def shutdown(self) -> None:
        self._jobs.put(None)


class LocalScorer(AwaitableScorer):
    """``env.verify_batch`` in a daemon thread; a batch over ``timeout_s`` comes back all ``None``."""

    name = "local"

    def __init__(self, env: SingleTurnEnv, *, max_chars: int = MAX_SCORED_CHARS) -> None:
        self.env = env
        self.max_chars = check_max_chars(max_chars)
        self._worker = DaemonWorker()
        self.abandoned_workers = 0

    def score(
        self, completions: Sequence[object], tasks: Sequence[Task], *, timeout_s: float | None = None
    ) -> list[Verdict | None]:
        """Verdicts in order; all ``None`` when the batch overran ``timeout_s`` (``None``: no budget)."""
        future = self._worker.submit(capped_verify_batch, self.env, completions, tasks, self.max_chars)
        try:
            return list(future.result(timeout=timeout_s))
        except concurrent.futures.TimeoutError:
            logger.warning(
                "verify_batch exceeded %.0f s; the batch is left unscored (not zeroed) and the stuck "
                "verifier thread is abandoned for a fresh one",
                timeout_s,
            )
            self._worker.shutdown()
            self._worker = DaemonWorker()
            self.abandoned_workers += 1
            return [None] * len(completions)

    def close(self) -> None:
        self._worker.shutdown()


__all__ = ["DaemonWorker", "LocalScorer"]
