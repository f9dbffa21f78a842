"""A pool of warm sandbox workers, one per core, so ``verify_batch`` keeps every core busy.

Each worker is a separate ``python -m rlvr_gym.verifiers.code.worker`` process; the pool feeds it jobs
over a pipe from one host thread per worker. A second, outer timeout (the worker's own budget
plus a grace period) guards against a wedged worker: it is killed with everything its sandbox
uid still runs, replaced, and the job reported as timed out.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from rlvr_gym.error import NotAvailableError
from rlvr_gym.verifiers.code.codec import (
    ChannelClosedError,
    ChannelTimeoutError,
    CodecError,
    FrameReader,
    write_frame,
)
from rlvr_gym.verifiers.code.policy import PRELOAD_ENV
from rlvr_gym.verifiers.code.sandbox import JUDGE_MEMORY_ENV, NO_NAMESPACES_ENV, UID_BASE, Limits

GRACE_S = 10.0
RECOVER_S = 2.0
IN_FLIGHT = 2
"""Jobs sent ahead to one worker: it starts the next as soon as it answers one, without
waiting for the host thread to be scheduled (on a busy machine that wait is most of the cost)."""


def default_workers() -> int:
    """``RLVR_GYM_SANDBOX_WORKERS`` if set, else one worker per CPU this process may use."""
    configured = os.environ.get("RLVR_GYM_SANDBOX_WORKERS")
    if configured:
        return max(1, int(configured))
    return max(1, len(os.sched_getaffinity(0)))


def worker_environment(namespaces: bool | None = None) -> dict[str, str]:
    """A minimal environment for workers: no host secrets to inherit, little for children to scrub.

    ``namespaces=False`` makes the workers build their walls without namespaces (the Landlock
    fallback); ``None`` passes :data:`NO_NAMESPACES_ENV` through from this process.
    """
    names = ("PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", NO_NAMESPACES_ENV, PRELOAD_ENV, JUDGE_MEMORY_ENV)
    env = {name: os.environ[name] for name in names if name in os.environ}
    if namespaces is not None:
        env.pop(NO_NAMESPACES_ENV, None)
        if not namespaces:
            env[NO_NAMESPACES_ENV] = "1"
    # rlvr_gym comes from the installed distribution (an editable install's finder included);
    # the caller's PYTHONPATH passes through, nothing of its working directory does.
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    # Every shared-library symbol resolved when its library loads, not on its first call: a first
    # call in a submission process (setsid, setresuid, setrlimit, ... which the fork server never
    # makes) ran the dynamic linker there and wrote the library's GOT, a copied page, every time.
    env["LD_BIND_NOW"] = "1"
    return env


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, namespaces: bool | None = None) -> None:
        env = worker_environment(namespaces)
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "rlvr_gym.verifiers.code.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None  # Popen's contract
        self.to_fd, self.from_fd = self.process.stdin.fileno(), self.process.stdout.fileno()
        self.replies = FrameReader(self.from_fd)
        hello = self.replies.read(time.monotonic() + 60)
        self.isolation: dict[str, Any] = hello["isolation"]
        self.pid: int = hello["pid"]  # the worker proper; self.process is its reaping supervisor
        self.host_dir: str = hello.get("host_dir", "")  # its folder in the host's /tmp, gone with it

    def sweep(self) -> None:
        """SIGKILL every process running under this worker's sandbox uid (from a helper process:
        switching uid in the multi-threaded host would switch it for every thread)."""
        if os.geteuid() == 0:
            uid = UID_BASE + self.pid
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"import os,signal; os.setresuid({uid},{uid},0); os.kill(-1, signal.SIGKILL)",
                ],
                check=False,
                stderr=subprocess.DEVNULL,
            )

    def kill(self) -> None:
        """Kill the worker and every process still running under its sandbox uid; the
        supervisor reaps them all and exits."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.sweep()  # sandbox processes may outlive their worker
        self.close()

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGKILL)
                self.process.wait()


class SandboxPool:
    """Runs sandbox jobs on ``workers`` warm worker processes (started on first use).

    ``namespaces=False`` forces the walls that need no namespaces (Landlock, seccomp, a uid of
    its own when root), as on a machine without them; ``None`` follows :data:`NO_NAMESPACES_ENV`.
    """

    def __init__(
        self, workers: int | None = None, *, grace_s: float = GRACE_S, namespaces: bool | None = None
    ) -> None:
        self.size = workers or default_workers()
        self.grace_s = grace_s
        self.namespaces = namespaces
        self._workers: list[_Worker | None] = [None] * self.size
        self._lock = threading.Lock()
        self._closed = False

    @property
    def isolation(self) -> dict[str, Any]:
        """Which isolation mechanisms the workers got on this machine."""
        with self._lock:
            return self._worker(0).isolation

    def _worker(self, slot: int) -> _Worker:
        if self._closed:
            raise NotAvailableError("SandboxPool is closed")
        worker = self._workers[slot]
        if worker is None or worker.process.poll() is not None:
            worker = self._workers[slot] = _Worker(self.namespaces)
        return worker

    def _budget(self, job: Mapping[str, Any]) -> float:
        return float(job.get("limits", {}).get("wall_s", Limits().wall_s)) + self.grace_s

    def _run_one(self, slot: int, job: Mapping[str, Any]) -> dict[str, Any]:
        worker = self._worker(slot)
        try:
            write_frame(worker.to_fd, job)
        except BrokenPipeError as exc:
            return self._died(slot, worker, exc)
        return self._answer(slot, worker, job)

    def _answer(self, slot: int, worker: _Worker, job: Mapping[str, Any]) -> dict[str, Any]:
        """The worker's outcome of ``job``, the oldest one sent to it and not answered yet."""
        try:
            outcome = worker.replies.read(time.monotonic() + self._budget(job))
        except ChannelTimeoutError:
            return self._overran(slot, worker)
        except (ChannelClosedError, CodecError) as exc:
            return self._died(slot, worker, exc)
        if outcome.get("retire"):  # it can run nothing more (its fork server died) and is exiting
            worker.kill()
            self._workers[slot] = None
        return outcome

    def _died(self, slot: int, worker: _Worker, exc: BaseException) -> dict[str, Any]:
        worker.kill()
        self._workers[slot] = None
        return {"status": "error", "errors": [f"sandbox worker died: {type(exc).__name__}: {exc}"]}

    def _drain(
        self,
        slot: int,
        jobs: Sequence[Mapping[str, Any]],
        todo: _Todo,
        results: list[dict[str, Any] | None],
    ) -> None:
        """Run jobs from ``todo`` on one worker, up to :data:`IN_FLIGHT` sent ahead: its own
        first, then others' (:class:`_Todo`). Jobs sent to a worker that then died or was
        replaced go back to ``todo``: they never ran."""
        sent: deque[int] = deque()
        worker: _Worker | None = None
        while True:
            while len(sent) < IN_FLIGHT:
                index = todo.take(slot)
                if index is None:
                    break
                if worker is None:
                    worker = self._worker(slot)
                try:
                    write_frame(worker.to_fd, jobs[index])
                except BrokenPipeError as exc:
                    if sent:  # the worker died: its answers below say so; this job waits
                        todo.give_back(slot, index)
                        break
                    results[index] = self._died(slot, worker, exc)
                    worker = None
                    continue
                sent.append(index)
            if not sent:
                return
            index = sent.popleft()
            results[index] = self._answer(slot, worker, jobs[index])  # type: ignore[arg-type]
            if self._workers[slot] is not worker:  # killed and replaced: the rest never ran
                for left in reversed(sent):
                    todo.give_back(slot, left)
                sent.clear()
                worker = None

    def _overran(self, slot: int, worker: _Worker) -> dict[str, Any]:
        """Outer timeout tier. Kill the sandbox first, which unblocks a worker waiting on it; the
        worker then reaps it and answers. Only a worker that still does not answer is killed
        (the zombies of its sandbox then go to init to reap)."""
        worker.sweep()
        try:
            outcome = worker.replies.read(time.monotonic() + RECOVER_S)
        except (ChannelTimeoutError, ChannelClosedError, CodecError):
            worker.kill()
            self._workers[slot] = None
            return {
                "status": "ran",
                "passed": 0,
                "total": 0,
                "timed_out": True,
                "load_error": None,
                "failures": ["worker overran its budget and was replaced"],
            }
        failures = [*outcome.get("failures", []), "the sandbox overran the outer budget and was killed"]
        return {**outcome, "timed_out": True, "failures": failures}

    def run(self, jobs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Outcomes of ``jobs``, in order; up to ``size`` run at once."""
        with self._lock:
            if len(jobs) <= 1:
                return [self._run_one(0, job) for job in jobs]
            results: list[dict[str, Any] | None] = [None] * len(jobs)
            todo = _Todo(jobs, min(self.size, len(jobs)))

            bugs: list[str] = []

            def drain(slot: int) -> None:
                try:
                    self._drain(slot, jobs, todo, results)
                except Exception as exc:  # noqa: BLE001 - a pool bug becomes an error verdict
                    bugs.append(f"sandbox pool: {type(exc).__name__}: {exc}")

            threads = [
                threading.Thread(target=drain, args=(slot,), daemon=True)
                for slot in range(min(self.size, len(jobs)))
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            missing = {"status": "error", "errors": bugs[:1] or ["job was not run"]}
            return [r if r is not None else missing for r in results]

    def release(self) -> None:
        """Stop every worker but keep the pool usable: the next job starts fresh ones.

        What an env's ``close()`` calls, since the default pool is shared by every code env.
        """
        with self._lock:
            for worker in self._workers:
                if worker is not None:
                    worker.close()
            self._workers = [None] * self.size

    def close(self) -> None:
        """Stop every worker (idempotent); the pool refuses work afterwards."""
        self.release()
        self._closed = True

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the settings only: worker processes and locks belong to this process."""
        return {"size": self.size, "grace_s": self.grace_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["size"], grace_s=state["grace_s"])  # type: ignore[misc]

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _affinity(job: Mapping[str, Any]) -> int:
    """Which worker a job goes to first: the same one for every job of the same tests (told apart
    cheaply: their kind, entry point, number of cases and the head of the first one)."""
    tests = job.get("tests")
    if not isinstance(tests, Mapping):
        return 0
    cases = tests.get("cases")
    cases = cases if isinstance(cases, list | tuple) else ()
    first = cases[0] if cases else ""
    if isinstance(first, Mapping):
        first = first.get("stdin", "")
    head = first[:256] if isinstance(first, str) else ""
    return hash((str(tests.get("kind")), str(tests.get("entry_point") or tests.get("fn")), len(cases), head))


class _Todo:
    """The jobs of one :meth:`SandboxPool.run` not sent yet: one queue per worker, each job in the
    queue of :func:`_affinity`'s worker, so the jobs of one task (a GRPO group) meet the same
    worker. Its judge prepares a task once (parses and plans its tests: ~1 ms) and its compile
    cache sees the group's repeated completions; dealt at random, each worker prepared most
    tasks. A worker whose queue is empty takes from the tail of the longest other one."""

    def __init__(self, jobs: Sequence[Mapping[str, Any]], workers: int) -> None:
        self.queues: list[deque[int]] = [deque() for _ in range(workers)]
        for index, job in enumerate(jobs):
            self.queues[_affinity(job) % workers].append(index)
        self.lock = threading.Lock()

    def take(self, slot: int) -> int | None:
        """The next job for worker ``slot``, or ``None`` when every queue is empty."""
        with self.lock:
            own = self.queues[slot]
            if own:
                return own.popleft()
            longest = max(self.queues, key=len)
            return longest.pop() if longest else None

    def give_back(self, slot: int, index: int) -> None:
        """A job sent to worker ``slot`` that never ran: first in its queue again."""
        with self.lock:
            self.queues[slot].appendleft(index)


_default: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool that verifiers share unless given one (closed at exit)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = SandboxPool()
            atexit.register(_default.close)
        return _default
