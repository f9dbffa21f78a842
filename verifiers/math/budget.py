"""A hard wall-clock and memory budget for symbolic work: a warm worker process that is killed.

A signal alarm cannot stop sympy while it multiplies huge integers in C, so symbolic
comparisons run in a separate, pre-started process with an address-space rlimit. The caller
waits at most ``timeout`` seconds for the answer; past that it kills the worker (SIGKILL) and
starts a fresh one. Requests and replies are JSON bytes, so nothing model-derived is unpickled.

Workers come from a ``forkserver`` that pre-imports sympy, so a restart costs milliseconds.
"""

from __future__ import annotations

import atexit
import importlib
import json
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

DEFAULT_TIMEOUT = 3.0
DEFAULT_MEMORY_MB = 1024
_PRELOAD = ["sympy", "verifiers.math.equivalence"]


@dataclass(frozen=True)
class Outcome:
    """What came back from the worker: ``status`` is ``ok``, ``timeout``, ``memory`` or ``crashed``."""

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


def _serve(conn: Connection, target: str, memory_mb: int) -> None:
    """Worker loop: one JSON request in, one JSON reply out, until the pipe closes."""
    module_name, _, attr = target.partition(":")
    function = getattr(importlib.import_module(module_name), attr)
    _limit_memory(memory_mb)
    while True:
        try:
            request = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            reply = {"status": "ok", "value": function(*request)}
        except MemoryError:
            reply = {"status": "memory"}
        except RecursionError:
            reply = {"status": "ok", "value": ["error", "recursion limit"]}
        try:
            conn.send_bytes(json.dumps(reply).encode())
        except MemoryError:
            conn.send_bytes(b'{"status": "memory"}')


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        return context
    return multiprocessing.get_context("spawn")


class Worker:
    """One warm worker process running ``target`` (``"module:function"`` of *our* code).

    ``call(*args, timeout=...)`` is thread-safe (calls are serialised) and never raises on a
    slow or crashing computation: it returns an :class:`Outcome` saying what happened.
    """

    def __init__(self, target: str, *, memory_mb: int = DEFAULT_MEMORY_MB) -> None:
        if not isinstance(memory_mb, int) or memory_mb < 64:
            raise ValueError(f"memory_mb must be an int >= 64, got {memory_mb!r}")
        self.target = target
        self.memory_mb = memory_mb
        self._lock = threading.Lock()
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._owner = 0
        self.restarts = 0

    def start(self) -> None:
        """Start the worker now (otherwise the first call does), so no call pays for it."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> Connection:
        alive = self._process is not None and self._owner == os.getpid() and self._process.is_alive()
        if alive and self._conn is not None:
            return self._conn
        self._stop()
        context = _context()
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child, self.target, self.memory_mb), daemon=True)
        process.start()
        child.close()
        self._process, self._conn, self._owner = process, parent, os.getpid()
        return parent

    def _stop(self) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if conn is not None:
            conn.close()
        if process is not None and self._owner == os.getpid():
            if process.is_alive():
                process.kill()
            process.join(timeout=1.0)

    def call(self, *args: Any, timeout: float = DEFAULT_TIMEOUT) -> Outcome:
        """Run ``target(*args)`` in the worker; kill it if it takes longer than ``timeout``."""
        if not (isinstance(timeout, int | float) and 0 < timeout < float("inf")):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        payload = json.dumps(args).encode()
        with self._lock:
            conn = self._ensure()
            started = time.perf_counter()
            try:
                conn.send_bytes(payload)
                if conn.poll(timeout):
                    reply = json.loads(conn.recv_bytes())
                    elapsed = time.perf_counter() - started
                    if reply.get("status") == "memory":
                        self._restart()
                    return Outcome(reply["status"], reply.get("value"), elapsed)
            except (EOFError, OSError, ValueError):
                self._restart()
                return Outcome("crashed", None, time.perf_counter() - started)
            self._restart()
            return Outcome("timeout", None, time.perf_counter() - started)

    def _restart(self) -> None:
        self.restarts += 1
        self._stop()
        self._ensure()

    def close(self) -> None:
        with self._lock:
            self._stop()


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
