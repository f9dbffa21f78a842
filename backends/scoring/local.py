"""``local`` scoring: the env's ``verify_batch`` on this host, in a worker process with budgets.

The env's own sandbox pool and math worker do the work (the embedded default; no Ray import), in
a copy of the env held by one worker process (:mod:`~rlvr_gym.backends.scoring.worker`), which
checks item by item, sends what it has made every 20 ms and keeps the item it is on in shared
memory. Two budgets:

* the batch's ``timeout_s``: items not scored by then come back ``None`` (unscored, never 0);
* each item's budget (``item_timeout_s``, at most a quarter of the batch's): an item whose checks
  run past it is the submission's failure, a ``timeout`` verdict (score 0), as a program that
  runs past the sandbox's wall limit is. Its content made a check slow that its neighbours passed
  through in milliseconds; the worker is killed (a regex holding the GIL cannot be stopped any
  other way) and the rest of the batch is scored by a fresh one. One hostile item costs itself.

A completion over ``max_chars`` never reaches the env
(:func:`~rlvr_gym.backends.scoring.capped_verify_batch`). An env that does not pickle (a class
defined inside a function) is scored in a daemon thread of this process instead, as before: a
hang there costs its whole batch one budget (the stuck thread is abandoned for a fresh one), and
a GIL-holding check can stall the process past the budget; a warning says so once.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import math
import pickle
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal

from rlvr_gym.backends.scoring import (
    MAX_SCORED_CHARS,
    AwaitableScorer,
    capped_verify_batch,
    check_max_chars,
)
from rlvr_gym.backends.scoring.worker import DONE, ProcessWorker, receive
from rlvr_gym.envs import Env
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Reason, Task, Verdict

logger = logging.getLogger("rlvr_gym.backends")

ITEM_TIMEOUT_S = 10.0
"""Default budget of one item's checks (a sandboxed run has its own wall limit, inside the
batch-wide part). Capped at a quarter of the batch's budget, so the stuck item, a fresh worker's
start (~1 s here) and the rest of the batch fit in the batch's budget."""
START_TIMEOUT_S = 60.0
"""How long the first batch waits for the worker to import and load the env (once a scorer)."""


def as_json(completion: object) -> str | None:
    """``completion`` as the JSON the worker reads (text, or chat messages made of JSON values;
    ASCII, so a lone surrogate travels too), or ``None`` when JSON cannot carry it as it is."""
    try:
        return json.dumps(completion)
    except (TypeError, ValueError, RecursionError):
        return None


def item_budget(item_timeout_s: float, timeout_s: float | None) -> float:
    """One item's budget in a batch of ``timeout_s``: ``item_timeout_s``, at most a quarter of it
    (so a stuck item, a fresh worker and the rest of the batch fit in the batch's budget)."""
    return item_timeout_s if timeout_s is None else min(item_timeout_s, timeout_s / 4)


def check_item_timeout(item_timeout_s: object) -> float:
    if (
        isinstance(item_timeout_s, bool)
        or not isinstance(item_timeout_s, int | float)
        or not 0 < item_timeout_s < math.inf
    ):
        raise InvalidArgumentError(f"item_timeout_s must be a finite number > 0, got {item_timeout_s!r}")
    return float(item_timeout_s)


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
    """``env.verify_batch`` in a worker process; an item over its budget is ``timeout``, the batch
    left over ``timeout_s`` is ``None``. ``isolation="thread"`` scores in a daemon thread (the
    fallback for an env that does not pickle). ``stats`` counts item timeouts and worker restarts."""

    name = "local"

    def __init__(
        self,
        env: Env,
        *,
        max_chars: int = MAX_SCORED_CHARS,
        item_timeout_s: float = ITEM_TIMEOUT_S,
        isolation: Literal["process", "thread"] = "process",
    ) -> None:
        if isolation not in ("process", "thread"):
            raise InvalidArgumentError(f"isolation must be 'process' or 'thread', got {isolation!r}")
        self.env = env
        self.max_chars = check_max_chars(max_chars)
        self.item_timeout_s = check_item_timeout(item_timeout_s)
        self.isolation = isolation
        self.abandoned_workers = 0  # threads abandoned to a hang, or worker processes killed
        self.stats: Counter[str] = Counter()
        self._thread: DaemonWorker | None = None
        self._process: ProcessWorker | None = None
        self._spare: ProcessWorker | None = None  # started while an item looks stuck
        self._env_bytes: bytes | None = None
        self._lock = threading.Lock()  # one batch at a time through the worker

    def score(
        self, completions: Sequence[object], tasks: Sequence[Task], *, timeout_s: float | None = None
    ) -> list[Verdict | None]:
        """Verdicts in order; ``None`` for items not scored within ``timeout_s`` (``None``: no
        batch budget; each item still has its own, :meth:`item_budget`)."""
        return self.score_within(
            completions, tasks, timeout_s=timeout_s, item_budget_s=self.item_budget(timeout_s)
        )

    def item_budget(self, timeout_s: float | None) -> float:
        return item_budget(self.item_timeout_s, timeout_s)

    def score_within(
        self,
        completions: Sequence[object],
        tasks: Sequence[Task],
        *,
        timeout_s: float | None,
        item_budget_s: float,
    ) -> list[Verdict | None]:
        """:meth:`score` with the item budget given (a Ray actor scores a chunk of a batch with the
        batch's item budget, in what is left of the batch's time)."""
        if len(completions) != len(tasks):
            raise InvalidArgumentError(f"score got {len(completions)} completions for {len(tasks)} tasks")
        if not completions:
            return []
        with self._lock:
            if self.isolation == "process" and self._first_start():
                return self._score_in_process(completions, tasks, timeout_s, item_budget_s)
            return self._score_in_thread(completions, tasks, timeout_s)

    def start(self) -> bool:
        """Start the worker process now (else the first batch does, outside its budget); False
        when this env is scored in a thread."""
        with self._lock:
            return self.isolation == "process" and self._first_start()

    # ----- the worker process ----------------------------------------------------------------
    def _first_start(self) -> bool:
        """Start the worker once (not counted against a batch's budget); False: use a thread."""
        if self._process is not None:
            return True
        try:
            self._env_bytes = pickle.dumps(self.env)
        except Exception as exc:  # noqa: BLE001 - pickling errors vary (TypeError, PicklingError, ...)
            return self._fall_back(f"the env does not pickle ({type(exc).__name__}: {exc})")
        self._process = ProcessWorker(self._env_bytes)
        why = self._process.start(START_TIMEOUT_S)
        if why is not None:
            self._process.kill()
            self._process = None
            return self._fall_back(why)
        return True

    def _fall_back(self, why: str) -> bool:
        logger.warning(
            "local scoring runs in a thread of this process: %s. A check that holds the GIL (a "
            "regex) can then stall training past the budget; define the env at module level",
            why,
        )
        self.isolation = "thread"
        return False

    def _ready_worker(self, deadline: float | None) -> ProcessWorker | None:
        """The worker, restarted if the last one was killed; None if it is not up by ``deadline``."""
        if self._process is not None and self._process.process.poll() is not None:
            self._kill()  # ended between batches (killed from outside, out of memory)
        if self._process is None:
            self._process, self._spare = self._spare or self._new_worker(), None
            self.stats["worker_restarts"] += 1
        if not self._process.ready:
            wait = START_TIMEOUT_S if deadline is None else max(0.0, deadline - time.monotonic())
            why = self._process.start(wait)
            if why is not None:
                if self._process.process.poll() is not None:  # died, not merely slow: try afresh next time
                    self._kill()
                logger.warning("local scoring: %s", why)
                return None
        return self._process

    def _new_worker(self) -> ProcessWorker:
        assert self._env_bytes is not None  # noqa: S101 - set by _first_start
        return ProcessWorker(self._env_bytes)

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process = None
            self.abandoned_workers += 1

    def _score_in_process(
        self,
        completions: Sequence[object],
        tasks: Sequence[Task],
        timeout_s: float | None,
        item_budget: float,
    ) -> list[Verdict | None]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        results: list[Verdict | None] = [None] * len(completions)
        encoded = [as_json(completion) for completion in completions]  # once, however often re-sent
        todo = []
        for index, completion in enumerate(completions):
            if encoded[index] is not None:
                todo.append(index)
            else:  # completions travel to the worker as JSON: text or chat messages
                results[index] = Verdict.fail(
                    Reason.BAD_FORMAT, why=f"a completion is text or chat messages, not {type(completion).__name__}"
                )
        while todo:
            worker = self._ready_worker(deadline)
            if worker is None:
                break
            sent, todo = todo, []
            try:
                worker.send([encoded[i] for i in sent], [tasks[i] for i in sent], self.max_chars)
            except OSError:  # it ended since it was checked: a fresh one takes the batch
                self._kill()
                todo = sent
                continue
            outcome = self._collect(worker, sent, results, deadline, item_budget)
            if outcome == DONE:
                break
            if outcome == "deadline":  # still busy with this batch: the next batch gets a fresh one
                self._kill()
                break
            if isinstance(outcome, str) and outcome.startswith("failed"):  # a bug outside every verifier
                for index in sent:  # (``run_verifier`` catches theirs)
                    if results[index] is None:
                        results[index] = Verdict.fail(Reason.ERROR, error=f"scoring worker: {outcome}")
                break
            culprit = sent[outcome] if isinstance(outcome, int) else sent[worker.marker.get() or 0]
            if results[culprit] is None:
                results[culprit] = self._charge(culprit, outcome, item_budget, worker)
            self._kill()
            todo = [i for i in sent if results[i] is None]
        unscored = sum(v is None for v in results)
        if unscored:
            logger.warning(
                "%d of %d items missed the %s s budget and are left unscored (not zeroed)",
                unscored,
                len(results),
                timeout_s,
            )
        return results

    def _collect(
        self,
        worker: ProcessWorker,
        sent: list[int],
        results: list[Verdict | None],
        deadline: float | None,
        item_budget: float,
    ) -> str | int:
        """Read the worker's verdicts into ``results`` until it says ``done``; or the position
        in ``sent`` of the item it overran its budget on, ``died``, ``deadline`` (the batch's
        budget spent), ``failed: why``. The worker's :class:`Marker` says which item it is on;
        it is read whenever no verdict has come for a quarter of the item budget."""
        on, since = None, time.monotonic()
        while True:
            now = time.monotonic()
            wait = item_budget / 4 if deadline is None else max(0.0, min(item_budget / 4, deadline - now))
            try:
                message = receive(worker.inbox) if worker.inbox.poll(wait) else None
            except (EOFError, OSError):
                return "died" if worker.marker.get() is not None else "failed: the scoring worker died"
            if message == DONE:
                return DONE
            if message is not None:
                if message[0] != "verdicts":
                    return f"failed: {message[1]}"
                for position, verdict in message[1]:
                    results[sent[position]] = verdict
                continue
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return "deadline"
            current = worker.marker.get()
            if current != on:
                on, since = current, now
            elif on is not None and now - since >= item_budget:
                return on
            elif on is not None and now - since >= item_budget / 2 and self._spare is None:
                self._spare = self._new_worker()  # looks stuck: its successor imports meanwhile

    def _charge(self, index: int, outcome: str | int, budget: float, worker: ProcessWorker) -> Verdict:
        """The verdict of the item the worker was on when it overran (the submission's ``timeout``)
        or died (``error``: a crash is not known to be the submission's doing)."""
        if isinstance(outcome, int):
            self.stats["item_timeouts"] += 1
            logger.warning(
                "item %d ran its checks past its %.2g s budget: timeout; the rest re-scored", index, budget
            )
            return Verdict.fail(
                Reason.TIMEOUT,
                why=f"the checks of this completion ran past the item budget of {budget:.3g} s",
            )
        self.stats["worker_deaths"] += 1
        code = worker.process.poll()
        return Verdict.fail(
            Reason.ERROR, error=f"the scoring worker died (exit code {code}) checking this item"
        )

    # ----- the thread fallback ---------------------------------------------------------------
    def _score_in_thread(
        self, completions: Sequence[object], tasks: Sequence[Task], timeout_s: float | None
    ) -> list[Verdict | None]:
        """All ``None`` when the batch overran ``timeout_s``: a thread cannot be stopped."""
        if self._thread is None:
            self._thread = DaemonWorker()
        future = self._thread.submit(capped_verify_batch, self.env, completions, tasks, self.max_chars)
        try:
            return list(future.result(timeout=timeout_s))
        except concurrent.futures.TimeoutError:
            logger.warning(
                "verify_batch exceeded %.0f s; the batch is left unscored (not zeroed) and the stuck "
                "verifier thread is abandoned for a fresh one",
                timeout_s,
            )
            self._thread.shutdown()
            self._thread = DaemonWorker()
            self.abandoned_workers += 1
            return [None] * len(completions)

    def close(self) -> None:
        """Stop the worker process (or thread); the next batch starts a fresh one."""
        with self._lock:
            for worker in (self._process, self._spare):
                if worker is not None:
                    worker.close()
            self._process = self._spare = None
            if self._thread is not None:
                self._thread.shutdown()
                self._thread = None


__all__ = ["ITEM_TIMEOUT_S", "DaemonWorker", "LocalScorer", "check_item_timeout", "item_budget"]
