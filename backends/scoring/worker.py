"""The ``local`` scorer's worker process: one copy of the env, verdicts streamed item by item.

Why a process: a verifier's regex holds the GIL, and no thread, timer or signal of the trainer's
process can stop it (a 2 s budget took 5-8 s and froze the trainer). A process can be killed. Why
item by item: when an item overruns its budget the scorer must know *which* one did, so that item
alone is charged (``timeout``) and the rest of its batch is scored by a fresh worker.

The child is a plain ``python -m`` of this module (not ``multiprocessing``'s spawn or forkserver,
which import the trainer's ``__main__`` again; not ``fork``, unsafe once a trainer has threads).
It reads the pickled env once (pools and math workers pickle as settings and restart here), then
answers batches on a pipe pair: ``("verdict", index, Verdict)`` per item, ``ITEMS`` when the
batch-wide part is done (see :func:`stream_verdicts`), ``DONE`` at the end.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection

from rlvr_gym.backends.scoring import completion_chars, oversized
from rlvr_gym.envs import SingleTurnEnv
from rlvr_gym.verifiers import Reason, Rubric, Task, Verdict, run_verifier, run_verifier_batch

ITEMS = "items"
"""Sent once the batch-wide part of a batch is done: from then on every item has its own budget."""
DONE = "done"


def stream_verdicts(
    env: SingleTurnEnv, completions: Sequence[object], tasks: Sequence[Task], max_chars: int
) -> Iterator[tuple[int, Verdict] | str]:
    """``(index, verdict)`` pairs in the order they are computed, with :data:`ITEMS` between the
    batch-wide part and the per-item part. Same verdicts as ``capped_verify_batch``.

    Components with a batch path of their own (the code verifier: its runs are sandboxed with
    their own wall limits) see the kept items whole, before :data:`ITEMS`; every other component
    is then run item by item, so the one item a slow check is stuck on is known. An env that
    overrides ``verify_batch``, or a bare batch verifier, is batch-wide as a whole.
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
    if type(env).verify_batch is not SingleTurnEnv.verify_batch or (
        not isinstance(rubric, Rubric) and callable(getattr(rubric, "verify_batch", None))
    ):
        verdicts = env.verify_batch(*kept) if keep else []
        yield ITEMS
        yield from zip(keep, verdicts, strict=True)
        return
    if not isinstance(rubric, Rubric):
        yield ITEMS
        for index, completion, task in zip(keep, *kept, strict=True):
            yield index, run_verifier(rubric, completion, task)
        return
    batched = {
        name: run_verifier_batch(verifier, *kept)
        for name, verifier in rubric.components.items()
        if keep and callable(getattr(verifier, "verify_batch", None))
    }
    yield ITEMS
    for j, (index, completion, task) in enumerate(zip(keep, *kept, strict=True)):
        parts = {
            name: batched[name][j] if name in batched else run_verifier(verifier, completion, task)
            for name, verifier in rubric.components.items()
        }
        yield index, rubric.combine(parts)


class ProcessWorker:
    """The parent's handle on one worker process: start it, send batches, read its messages, kill it."""

    def __init__(self, env_bytes: bytes) -> None:
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(from_parent), str(to_parent)],
            pass_fds=(from_parent, to_parent),
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
            message = self.inbox.recv()
        except (EOFError, OSError):
            return f"the scoring worker exited at start-up (code {self.process.poll()})"
        if message[0] != "ready":
            return str(message[1])
        self.ready = True
        return None

    def send(self, completions: Sequence[object], tasks: Sequence[Task], max_chars: int) -> None:
        self._send.send((list(completions), list(tasks), max_chars))

    def kill(self) -> None:
        """Stop the child at once (it may be stuck in C code that holds its GIL) and reap it."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        for connection in (self._send, self.inbox):
            with contextlib.suppress(OSError):
                connection.close()

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


def serve(inbox: Connection, outbox: Connection) -> None:
    """The child's loop: load the env, then stream the verdicts of every batch it is sent."""
    path, env_bytes = inbox.recv()
    sys.path[:] = [p for p in path if p not in sys.path] + sys.path
    try:
        env = pickle.loads(env_bytes)
    except Exception as exc:  # noqa: BLE001 - e.g. a class defined in the trainer's __main__
        outbox.send(("broken", f"the env does not load in a worker process: {type(exc).__name__}: {exc}"))
        return
    outbox.send(("ready",))
    while True:
        try:
            completions, tasks, max_chars = inbox.recv()
        except EOFError:
            return
        try:
            for message in stream_verdicts(env, completions, tasks, max_chars):
                if isinstance(message, str):
                    outbox.send(message)
                    continue
                try:
                    outbox.send(("verdict", *message))
                except (pickle.PicklingError, TypeError, AttributeError) as exc:  # details that do not pickle
                    error = f"the verdict does not pickle: {type(exc).__name__}: {exc}"
                    outbox.send(("verdict", message[0], Verdict.fail(Reason.ERROR, error=error)))
        except Exception as exc:  # noqa: BLE001 - a bug outside any verifier: report it, keep serving
            outbox.send(("failed", f"{type(exc).__name__}: {exc}"))
        else:
            outbox.send(DONE)


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGVTALRM, _exit_if_orphaned)
    signal.setitimer(signal.ITIMER_VIRTUAL, 1.0, 1.0)  # every CPU second spent
    serve(Connection(int(argv[0]), writable=False), Connection(int(argv[1]), readable=False))


if __name__ == "__main__":
    main(sys.argv[1:])


__all__ = ["DONE", "ITEMS", "ProcessWorker", "stream_verdicts"]
