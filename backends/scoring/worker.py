"""The ``local`` scorer's worker process: one copy of the env, checked item by item.

Why a process: a verifier's regex holds the GIL, and no thread, timer or signal of the trainer's
process can stop it (a 2 s budget took 5-8 s and froze the trainer). A process can be killed. Why
item by item: when an item overruns its budget the scorer must know *which* one did, so that item
alone is charged (``timeout``) and the rest of its batch is scored by a fresh worker.

The child is a plain ``python -m`` of this module (not ``multiprocessing``'s spawn or forkserver,
which import the trainer's ``__main__`` again; not ``fork``, unsafe once a trainer has threads).
It reads the pickled env once (pools and math workers pickle as settings and restart here), then
answers batches on a pipe pair: ``["verdicts", [[index, verdict dict], ...]]`` every
:data:`FLUSH_S` and at the end, then ``DONE``. Whatever carries model text — the completions in,
the verdicts (which quote answers) out, every message the trainer reads — travels as JSON, never
as a pickle: no model text reaches ``pickle.loads`` in either process. Only the env (once) and the
tasks (the data set's rows) are pickled, by the trainer. Which item it is checking now is in a shared
:class:`Marker`, so the scorer knows the culprit of an overrun without a message per item.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any

from rlvr_gym.backends.scoring import completion_chars, oversized
from rlvr_gym.envs import Env
from rlvr_gym.verifiers import Rubric, Task, Verdict, run_verifier, run_verifier_batch

DONE = "done"
FLUSH_S = 0.02
"""The worker sends the verdicts it has made at most this often (and at the end of a batch): one
message for a batch of easy items, and a killed worker loses at most this much work."""


def stream_verdicts(
    env: Env,
    completions: Sequence[object],
    tasks: Sequence[Task],
    max_chars: int,
    starting: Callable[[int], None] = lambda index: None,
) -> Iterator[tuple[int, Verdict]]:
    """``(index, verdict)`` pairs in the order they are made; ``starting(index)`` is called before
    each item's own checks begin. Same verdicts as ``capped_verify_batch``.

    Components with a batch path of their own (the code verifier: its runs are sandboxed with
    their own wall limits) see the kept items whole, first; every other component is then run
    item by item, so the one item a slow check is stuck on is known. An env that overrides
    ``verify_batch``, or a bare batch verifier, is batch-wide as a whole.
    """
    keep: list[int] = []
    for index, completion in enumerate(completions):
        chars = completion_chars(completion)
        if chars > max_chars:
            yield index, oversized(chars, max_chars)
        else:
            keep.append(index)
    kept = [completions[i] for i in keep], [tasks[i] for i in keep]
    rubric = env.rubric
    if type(env).verify_batch is not Env.verify_batch or (
        not isinstance(rubric, Rubric) and callable(getattr(rubric, "verify_batch", None))
    ):
        yield from zip(keep, env.verify_batch(*kept) if keep else [], strict=True)
        return
    components = rubric.components if isinstance(rubric, Rubric) else {"": rubric}
    batched = {
        name: run_verifier_batch(verifier, *kept)
        for name, verifier in components.items()
        if keep and callable(getattr(verifier, "verify_batch", None))
    }
    for j, (index, completion, task) in enumerate(zip(keep, *kept, strict=True)):
        starting(index)
        parts = {
            name: batched[name][j] if name in batched else run_verifier(verifier, completion, task)
            for name, verifier in components.items()
        }
        yield index, rubric.combine(parts) if isinstance(rubric, Rubric) else parts[""]


class Marker:
    """One shared int64: the item a worker is checking now (``index + 1``; 0: none of its own).

    Written by the worker before each item, read by the scorer when no verdict has come for a
    while; an aligned 8-byte store, so never read torn. (A message per item cost a 16-item batch
    ~2 ms of wake-ups on a busy 2-core machine.)
    """

    def __init__(self, fd: int | None = None) -> None:
        self.fd = os.memfd_create("rlvr-gym-scoring", os.MFD_CLOEXEC) if fd is None else fd
        if fd is None:
            os.ftruncate(self.fd, 8)
        self._map = mmap.mmap(self.fd, 8)
        self._word = memoryview(self._map).cast("q")

    def set(self, index: int) -> None:
        self._word[0] = index + 1

    def clear(self) -> None:
        self._word[0] = 0

    def get(self) -> int | None:
        value = self._word[0]
        return None if value == 0 else value - 1

    def close(self) -> None:
        self._word.release()
        self._map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


class ProcessWorker:
    """The parent's handle on one worker process: start it, send batches, read its messages, kill it."""

    def __init__(self, env_bytes: bytes) -> None:
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        self.marker = Marker()
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(from_parent), str(to_parent), str(self.marker.fd)],
            pass_fds=(from_parent, to_parent, self.marker.fd),
            stdin=subprocess.DEVNULL,
        )
        os.close(from_parent)
        os.close(to_parent)
        self._send = Connection(to_child, readable=False)
        self.inbox = Connection(from_child, writable=False)
        self.ready = False
        self._env_bytes: bytes | None = env_bytes  # sent by ``start``: the child imports first

    def start(self, timeout_s: float) -> str | None:
        """Wait for the child to load the env: ``None`` when ready, else why it is not."""
        if self._env_bytes is not None:
            with contextlib.suppress(OSError):  # the child died at start-up: said below
                self._send.send((list(sys.path), self._env_bytes))
            self._env_bytes = None
        try:
            if not self.inbox.poll(timeout_s):
                return f"the scoring worker did not start within {timeout_s:.0f} s"
            message = receive(self.inbox)
        except (EOFError, OSError):
            return f"the scoring worker exited at start-up (code {self.process.poll()})"
        if message[0] != "ready":
            return str(message[1])
        self.ready = True
        return None

    def send(self, completions_json: Sequence[str], tasks: Sequence[Task], max_chars: int) -> None:
        """A batch: each completion already JSON (``local.as_json``), the tasks pickled by us."""
        self.marker.clear()
        self._send.send_bytes(f"[[{','.join(completions_json)}], {int(max_chars)}]".encode())
        self._send.send(list(tasks))  # the data set's rows

    def kill(self) -> None:
        """Stop the child at once (it may be stuck in C code that holds its GIL) and reap it."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        for connection in (self._send, self.inbox):
            with contextlib.suppress(OSError):
                connection.close()
        self.marker.close()

    def close(self) -> None:
        """Ask the child to exit (end of input), then make sure it has."""
        with contextlib.suppress(OSError):
            self._send.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1)
        self.kill()


def _exit_if_orphaned(*_: object) -> None:
    """SIGVTALRM handler: a worker whose trainer died stops instead of finishing a stuck check.
    (Idle, it reads end-of-file and exits. ``PR_SET_PDEATHSIG`` would fire when the *thread*
    that started it ends, e.g. an ``asyncio.to_thread`` worker; a regex checks signals, so
    this handler runs even inside one.)"""
    if os.getppid() != _parent:
        os._exit(0)


_parent = os.getppid()


def serve(inbox: Connection, outbox: Connection, marker: Marker) -> None:
    """The child's loop: load the env, then answer every batch it is sent."""
    path, env_bytes = inbox.recv()
    sys.path[:] = [p for p in path if p not in sys.path] + sys.path
    try:
        env = pickle.loads(env_bytes)
    except Exception as exc:  # noqa: BLE001 - e.g. a class defined in the trainer's __main__
        put(outbox, ["broken", f"the env does not load in a worker process: {type(exc).__name__}: {exc}"])
        return
    put(outbox, ["ready"])
    while True:
        try:
            completions, max_chars = json.loads(inbox.recv_bytes())
            tasks = inbox.recv()
        except EOFError:
            return
        try:
            made: list[tuple[int, Verdict]] = []
            flushed = time.monotonic()
            for made_one in stream_verdicts(env, completions, tasks, max_chars, marker.set):
                made.append(made_one)
                if time.monotonic() - flushed >= FLUSH_S:
                    send_verdicts(outbox, made)
                    made, flushed = [], time.monotonic()
            marker.clear()
            send_verdicts(outbox, made)
        except Exception as exc:  # noqa: BLE001 - a bug outside any verifier: report it, keep serving
            put(outbox, ["failed", f"{type(exc).__name__}: {exc}"])
        else:
            put(outbox, DONE)


def put(outbox: Connection, message: object) -> None:
    """One JSON message (ASCII, so a lone surrogate in an answer travels too)."""
    outbox.send_bytes(json.dumps(message).encode())


def receive(inbox: Connection) -> Any:
    """One message :func:`put` wrote; verdicts come back as :class:`Verdict` objects."""
    message = json.loads(inbox.recv_bytes())
    if isinstance(message, list) and message and message[0] == "verdicts":
        return ["verdicts", [(index, Verdict.from_dict(verdict)) for index, verdict in message[1]]]
    return message


def send_verdicts(outbox: Connection, made: list[tuple[int, Verdict]]) -> None:
    """One message of ``[index, verdict dict]`` pairs (details JSON cannot hold go as their
    ``repr``, as :meth:`Verdict.to_dict` writes them)."""
    if made:
        put(outbox, ["verdicts", [[index, verdict.to_dict()] for index, verdict in made]])


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGVTALRM, _exit_if_orphaned)
    signal.setitimer(signal.ITIMER_VIRTUAL, 1.0, 1.0)  # every CPU second spent
    inbox, outbox, marker = int(argv[0]), int(argv[1]), int(argv[2])
    serve(Connection(inbox, writable=False), Connection(outbox, readable=False), Marker(marker))


if __name__ == "__main__":
    main(sys.argv[1:])


__all__ = ["DONE", "Marker", "ProcessWorker", "stream_verdicts"]
