"""A hard wall-clock and memory budget for symbolic work: a warm worker process that is killed.

A signal alarm cannot stop sympy while it multiplies huge integers in C, so symbolic
comparisons run in a separate process (``python -m rlvr_gym.verifiers.math.budget``) with an
address-space rlimit. The caller waits at most ``timeout`` seconds for the reply; past that it
kills the worker (SIGKILL) and promotes a *standby* worker that was started in advance, so the
next call does not pay sympy's import time. Requests and replies are JSON lines on pipes:
nothing model-derived is unpickled, and the caller's ``__main__`` is never re-imported (as
multiprocessing's spawn and forkserver would do).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from rlvr_gym.error import InvalidArgumentError, RunFailedError

DEFAULT_TIMEOUT = 3.0
DEFAULT_MEMORY_MB = 1024
STARTUP_TIMEOUT = 60.0
_READY = "ready"


@dataclass(frozen=True)
class Outcome:
    """What came back: ``status`` is ``ok``, ``timeout``, ``memory``, ``crashed`` or ``error``

    (the target raised; ``value`` holds the exception text and the worker keeps serving).
    """

    status: str
    value: Any = None
    seconds: float = 0.0


def _limit_memory(memory_mb: int) -> None:
    try:
        import resource

        with open("/proc/self/status") as status:
            vm_kb = next((int(line.split()[1]) for line in status if line.startswith("VmSize:")), 0)
        limit = vm_kb * 1024 + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, OSError, ValueError):  # not Linux: the wall clock still bounds the work
        pass


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the caller dies, so no orphan keeps computing."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the closed stdin still ends the loop
        pass


def serve(target: str, memory_mb: int) -> None:
    """Worker loop: one JSON request line in, one JSON reply line out, until stdin closes."""
    _die_with_parent()
    module_name, _, attr = target.partition(":")
    function = getattr(importlib.import_module(module_name), attr)
    _limit_memory(memory_mb)
    out = sys.stdout
    out.write(_READY + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            reply = {"status": "ok", "value": function(*json.loads(line))}
        except MemoryError:
            reply = {"status": "memory"}
        except RecursionError:
            reply = {"status": "ok", "value": ["invalid", "recursion limit"]}
        except Exception as exc:  # noqa: BLE001 - a bug in the target: report it, keep serving
            reply = {"status": "error", "value": f"{type(exc).__name__}: {exc}"[:500]}
        try:
            text = json.dumps(reply)
        except MemoryError:
            text = '{"status": "memory"}'
        out.write(text + "\n")
        out.flush()


class _Process:
    """One worker process and a line reader over its stdout with a deadline."""

    def __init__(self, target: str, memory_mb: int, environment: dict[str, str] | None = None) -> None:
        env = {**os.environ, **(environment or {})}  # rlvr_gym itself comes from the installed distribution
        self.popen = subprocess.Popen(
            # -P: the caller's working directory is not put on sys.path (no stray sympy.py shadows ours)
            [sys.executable, "-P", "-m", "rlvr_gym.verifiers.math.budget", target, str(memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        self.buffer = b""
        self.ready = False
        self.owner = os.getpid()
        self.started = time.monotonic()

    def readline(self, deadline: float) -> str | None:
        """The next line, or ``None`` if none arrives before ``deadline`` (or the pipe closes)."""
        stdout = self.popen.stdout
        if stdout is None:
            return None
        fd = stdout.fileno()
        while b"\n" not in self.buffer:
            # Past the deadline still looks once without waiting: a standby's ready line may have
            # sat in the pipe for minutes, and it is no less ready for that.
            remaining = max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def wait_ready(self, deadline: float) -> bool:
        """Wait for the ready line until ``deadline``; a partial line stays buffered for later."""
        if not self.ready:
            self.ready = self.readline(min(deadline, self.started + STARTUP_TIMEOUT)) == _READY
        return self.ready

    def failed_to_start(self) -> bool:
        """Dead before ready, or not ready after :data:`STARTUP_TIMEOUT`."""
        if self.ready:
            return False
        return self.popen.poll() is not None or time.monotonic() - self.started > STARTUP_TIMEOUT

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.popen.poll() is None

    def kill(self) -> None:
        if self.owner != os.getpid():
            return
        if self.popen.poll() is None:
            self.popen.kill()
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                stream.close()
        self.popen.wait(timeout=5)


class Worker:
    """A warm worker process running ``target`` (``"module:function"`` of *our* code), plus a standby.

    ``call(*args, timeout=...)`` is thread-safe (calls are serialised) and never raises on a
    slow or crashing computation: it returns an :class:`Outcome` saying what happened.
    """

    def __init__(self, target: str, *, memory_mb: int = DEFAULT_MEMORY_MB) -> None:
        if isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb < 64:
            raise InvalidArgumentError(f"memory_mb must be an int >= 64, got {memory_mb!r}")
        self.target = target
        self.memory_mb = memory_mb
        self._lock = threading.Lock()
        self._active: _Process | None = None
        self._standby: _Process | None = None
        self._warm_in: int | None = None  # the pid in which a worker has been ready once
        self.restarts = 0

    def start(self) -> None:
        """Start the worker (and its standby) now and wait until it is ready."""
        with self._lock:
            self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        """(Lock held.) Wait for the active worker, at most :data:`STARTUP_TIMEOUT`, and note that
        one has been ready in this process."""
        if self._ensure(time.monotonic() + STARTUP_TIMEOUT) is None:
            raise RunFailedError(f"worker for {self.target} did not start within {STARTUP_TIMEOUT:g} s")
        self._warm_in = os.getpid()

    def spawn(self) -> None:
        """Start the worker process now without waiting for it (a head start on sympy's import)."""
        with self._lock:
            if self._active is None or not self._active.alive():
                self._promote()

    def _promote(self) -> None:
        """Make the standby (or a fresh process) the active worker, and start a new standby."""
        if self._active is not None:
            self._active.kill()
        candidate = self._standby if self._standby is not None and self._standby.alive() else None
        self._active = candidate or _Process(self.target, self.memory_mb)
        self._standby = _Process(self.target, self.memory_mb)

    def _ensure(self, deadline: float) -> _Process | None:
        """The ready active worker, or ``None`` when it is still starting at ``deadline``."""
        if self._active is None or not self._active.alive():
            self._promote()
        active = self._active
        if active is None:
            return None
        if active.wait_ready(deadline):
            return active
        if active.failed_to_start():
            active.kill()
            self._active = None
            raise RunFailedError(f"worker for {self.target} did not start within {STARTUP_TIMEOUT:g} s")
        return None

    def call(self, *args: Any, timeout: float = DEFAULT_TIMEOUT) -> Outcome:
        """Run ``target(*args)`` in the worker; kill it if it takes longer than ``timeout``."""
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < float("inf")
        ):
            raise InvalidArgumentError(f"timeout must be a positive number of seconds, got {timeout!r}")
        payload = (json.dumps(args) + "\n").encode()
        with self._lock:
            if self._warm_in != os.getpid():  # never ready here (a fresh worker, a forked copy, after close)
                # The first start is the host's, not the computation's: charged to the budget, it
                # marked right answers ``timeout`` whenever sympy's import outran the budget (the
                # first checks on a busy or slow machine). Later starts stay inside the budget: a
                # warm standby takes over after a kill, so one hostile answer cannot make the next
                # call wait for an import.
                self._wait_until_ready()
            started = time.monotonic()
            process = self._ensure(started + timeout)
            if process is None:
                return Outcome("timeout", "the worker was still starting", time.monotonic() - started)
            try:
                if process.popen.stdin is None:
                    raise OSError("worker has no stdin")
                process.popen.stdin.write(payload)
                process.popen.stdin.flush()
                line = process.readline(started + timeout)
            except OSError:
                line = None
            elapsed = time.monotonic() - started
            if line is None:
                status = "timeout" if process.popen.poll() is None and elapsed >= timeout else "crashed"
                self._retire()
                return Outcome(status, None, elapsed)
            reply = json.loads(line)
            if reply.get("status") == "memory":
                self._retire()
            return Outcome(reply["status"], reply.get("value"), elapsed)

    def _retire(self) -> None:
        """Kill the active worker; the standby takes over at the next call."""
        self.restarts += 1
        if self._active is not None:
            self._active.kill()
            self._active = None

    def close(self) -> None:
        with self._lock:
            for process in (self._active, self._standby):
                if process is not None:
                    process.kill()
            self._active = self._standby = None
            self._warm_in = None


_workers: dict[tuple[str, int], Worker] = {}
_workers_lock = threading.Lock()


def shared_worker(target: str, memory_mb: int = DEFAULT_MEMORY_MB) -> Worker:
    """The process-wide worker for ``(target, memory_mb)``: verifiers share one warm process."""
    with _workers_lock:
        worker = _workers.get((target, memory_mb))
        if worker is None:
            worker = _workers[(target, memory_mb)] = Worker(target, memory_mb=memory_mb)
        return worker


@atexit.register
def _close_all() -> None:
    for worker in list(_workers.values()):
        worker.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
