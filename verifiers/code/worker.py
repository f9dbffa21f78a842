"""A warm worker: pre-imported, isolated once, judges one sandboxed process per submission.

Its fork server (:mod:`.spawner`), forked once after the walls are built, makes those processes:
the judge itself never forks, so its memory is never copied-on-write per submission.

Started by :class:`rlvr_gym.verifiers.code.pool.SandboxPool` as ``python -m rlvr_gym.verifiers.code.worker``; jobs
and outcomes travel as frames on its stdin/stdout. Being a separate program (not a fork of the
host) it inherits none of the host's threads, memory or open files, so what a submission's
fork inherits is small and known.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from rlvr_gym.verifiers.code import policy
from rlvr_gym.verifiers.code.codec import (
    ChannelClosedError,
    CodecError,
    FrameReader,
    dumps,
    loads,
    write_frame,
)
from rlvr_gym.verifiers.code.harness import (
    InvalidTestsError,
    Outcome,
    Session,
    call_request,
    judge,
    mode_of,
    plan_ahead,
    validate_tests,
)
from rlvr_gym.verifiers.code.sandbox import (
    JUDGE_MEMORY_ENV,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_PDEATHSIG,
    Isolation,
    Limits,
    enter_pid_namespace,
    enter_workdir,
    isolate_worker,
    prctl,
    sandbox_uid,
)
from rlvr_gym.verifiers.code.spawner import Spawner, SpawnerGoneError, run_setup, setup_blob
from rlvr_gym.verifiers.code.workspace import Workspace, WorkspaceStuckError, empty_tree, remove_tree

CACHED_SOURCE_CHARS = 20_000
JUDGE_MEMORY_MB = 2048
"""Address space the judge may add to what it holds after start-up (``RLIMIT_AS``, soft): the
decoder's caps keep a submission's answers far below it; it is the backstop that turns a blow-up
into a ``MemoryError`` (the submission's failure) instead of the host's out-of-memory killer."""


@functools.lru_cache(maxsize=256)
def _compile_cached(source: str, restricted: bool) -> policy.PolicyResult:
    return (policy.compile_submission if restricted else policy.compile_plain)(source)


def compile_job(source: str, restricted: bool) -> policy.PolicyResult:
    """The policy compile, memoised for short programs: GRPO groups often repeat a completion."""
    if len(source) > CACHED_SOURCE_CHARS:
        return (policy.compile_submission if restricted else policy.compile_plain)(source)
    return _compile_cached(source, restricted)


def planned(spec: Mapping[str, Any]) -> tuple[tuple[bytes, ...], tuple[dict[str, Any], ...]]:
    """The requests planned ahead for ``spec``: as frames (the judge matches its questions against
    them) and decoded (what the sandbox gets). ``assert`` tests are memoised by their code: every
    completion of a task (a GRPO group) has the same plan."""
    if spec["kind"] == "assert" and isinstance(spec.get("entry_point"), str):
        return _planned_asserts(spec["entry_point"], tuple(spec["cases"]))
    return _plan(spec)


@functools.lru_cache(maxsize=1024)
def _planned_asserts(
    entry_point: str, cases: tuple[str, ...]
) -> tuple[tuple[bytes, ...], tuple[dict[str, Any], ...]]:
    return _plan({"kind": "assert", "entry_point": entry_point, "cases": cases})


def _plan(spec: Mapping[str, Any]) -> tuple[tuple[bytes, ...], tuple[dict[str, Any], ...]]:
    frames = tuple(dumps(request) for request in plan_ahead(spec))
    return frames, tuple(loads(frame) for frame in frames)


def run_job(
    job: Mapping[str, Any], isolation: Isolation, spawner: Spawner, workspace: Workspace | None = None
) -> dict[str, Any]:
    """Policy check, then one sandboxed process judged to the end; always returns an outcome."""
    try:
        spec = validate_tests(job["tests"])
    except InvalidTestsError as exc:
        return {"status": "error", "errors": [str(exc)]}
    limits = Limits(**job.get("limits", {}))
    restricted = job.get("restricted", True)
    compiled = compile_job(job["source"], bool(restricted))
    if not compiled.ok:
        return {
            "status": "syntax" if compiled.syntax_error else "unsafe",
            "errors": list(compiled.errors)[:5],
        }
    uid = sandbox_uid(isolation)
    workdir = workspace.workdir if workspace else tempfile.mkdtemp(prefix="sandbox-")
    if uid is not None and not workspace:
        os.chown(workdir, uid, uid)
    deadline = time.monotonic() + limits.wall_s
    ahead, requests = planned(spec)
    setup = setup_blob(compiled.code, bool(restricted), mode_of(spec), limits.output_bytes, requests)
    sandbox = spawner.spawn(
        limits,
        None if workspace else workdir,  # its path and environment were entered once (enter_workdir)
        cwd=workdir,
        uid=uid,
        block_sockets=isolation.network.startswith("no network namespace"),
        scope=isolation.scope_children,
    )
    session = Session(sandbox.request_fd, sandbox.reply_fd, deadline, ahead, setup, close=sandbox.close)
    try:
        outcome = judge(spec, session, reveal=bool(job.get("reveal_tests", False)))
    finally:
        status = session.close()
        if workspace:
            workspace.reset()  # after every process of the submission is gone
        else:
            remove_tree(workdir)
    cap_output(outcome, limits.output_bytes)
    return {"status": "ran", **outcome.as_dict(), "exit_status": status}


def cap_output(outcome: Outcome, limit: int) -> None:
    """Hold the ``run`` kind's output to ``limit`` characters here, in the judge: the sandbox's
    own cap (its stdout object) is the submission's to bypass (``super(type(sys.stdout),
    sys.stdout).write``). Printing past it is the submission's failure, as the sandbox's cap says."""
    if outcome.output is None or len(outcome.output) <= limit:
        return
    outcome.output = outcome.output[:limit]
    outcome.passed = 0
    outcome.failures[:] = [f"OutputLimitExceeded: output exceeds {limit} characters", *outcome.failures][:3]


def send_outcome(fd: int, outcome: Mapping[str, Any]) -> None:
    """Write one outcome frame; one that cannot be encoded (a bug of ours: every field a
    submission fills is capped) is answered with an ``error`` outcome, and the worker serves on."""
    try:
        write_frame(fd, outcome)  # encodes first: nothing is written when it raises
    except CodecError as exc:
        write_frame(fd, {"status": "error", "errors": [f"the outcome could not be sent: {str(exc)[:200]}"]})


def supervise(worker: int, host_dir: str) -> int:
    """The parent of the worker: a subreaper that reaps everything left when the worker dies.

    If the pool has to kill a wedged worker, its sandbox processes are orphaned; without this
    they would be re-parented to init, which in some containers never reaps them (zombies).
    Exits once the worker and every orphan are gone, with the worker's exit code, after removing
    ``host_dir`` (the worker's folder in the host's ``/tmp``) and whatever was left in it.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)  # the pool's pipes belong to the worker alone
    os.dup2(devnull, 1)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    code = 0
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            remove_host_dir(host_dir)
            return code
        if pid == worker:
            code = os.waitstatus_to_exitcode(status)


HOST_DIR_WAIT_S = 1.0


def remove_host_dir(host_dir: str) -> None:
    """Remove the worker's folder in the host's ``/tmp``; what is left after
    :data:`HOST_DIR_WAIT_S` (a tree on a disk where each ``rmdir`` costs milliseconds) is removed
    by a detached process, so closing a pool never waits on a submission's litter."""
    if empty_tree(host_dir, time.monotonic() + HOST_DIR_WAIT_S):
        remove_tree(host_dir)
        return
    if os.fork() == 0:  # the remover is a grandchild, orphaned at once: nobody waits on it
        try:
            os.setsid()
            if os.fork() == 0:
                remove_tree(host_dir)
        finally:
            os._exit(0)
    with contextlib.suppress(ChildProcessError):
        os.wait()


def main() -> int:
    """Fork the worker under a reaping supervisor; serve jobs until the pool closes our stdin."""
    namespaces = enter_pid_namespace()
    host_dir = tempfile.mkdtemp(prefix="sandbox-worker-")
    pid_r, pid_w = os.pipe()
    worker = os.fork()
    if worker:
        os.write(pid_w, str(worker).encode())  # its pid as the host sees it
        os.close(pid_w)
        return supervise(worker, host_dir)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.close(pid_w)
    host_pid = int(os.read(pid_r, 32))
    os.close(pid_r)
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    for fd in (in_fd, out_fd):
        os.set_inheritable(fd, False)
    missing = policy.preload_modules()
    warm_sandbox_paths()
    policy.prepare_globals("submission", "__main__")
    gc.collect()
    gc.freeze()  # forked children's GC then never touches (and copies) the worker's objects
    limit_judge_memory()
    isolation = isolate_worker(namespaces, host_pid, host_dir)
    workspace = None
    if isolation.private_dirs:
        workspace = Workspace(isolation.private_dirs[0], sandbox_uid(isolation))
        enter_workdir(workspace.workdir)
    if missing:
        isolation.notes.append(f"modules to preload that failed to import: {', '.join(missing)}")
    spawner = Spawner(init=isolation.spawner_init, worker_fds=(in_fd, out_fd), scope=isolation.scope_children)
    if spawner.filter.startswith("!"):
        isolation.missing.append(f"seccomp filter of the submissions' own: {spawner.filter[1:]}")
    elif isolation.seccomp:
        isolation.seccomp += f"; {spawner.filter}"
    write_frame(out_fd, {"isolation": isolation.as_dict(), "pid": host_pid, "host_dir": host_dir})
    jobs = FrameReader(in_fd)
    while True:
        try:
            job = jobs.read()
        except ChannelClosedError:
            spawner.close()
            return 0
        try:
            outcome = run_job(job, isolation, spawner, workspace)
        except (KeyboardInterrupt, SystemExit):
            raise
        except (SpawnerGoneError, WorkspaceStuckError) as exc:  # nothing more runs here: answer, then retire
            write_frame(out_fd, {"status": "error", "errors": [str(exc)], "retire": True})
            return 1
        except BaseException as exc:  # noqa: BLE001 - a verifier bug: report it, keep serving
            outcome = {"status": "error", "errors": [f"{type(exc).__name__}: {exc}"[:500]]}
        send_outcome(out_fd, outcome)


WARM_RUNS = 24
"""Runs of :func:`warm_sandbox_paths`: CPython 3.11 specialises a function's bytecode once it has
run 8 times, and its instructions' own counters settle within a few runs more."""

_WARM_PROGRAM = "def f(x, y=None):\n    return [x, (x,), {'k': x}, {1}, b'b', 0.5, x % 3 == 0, y]\n"
_WARM_SPECS = (
    {
        "kind": "calls",
        "fn": "f",
        "cases": [{"args": [3], "expected": None}, {"args": [[1, 2]], "expected": None}],
    },
    {"kind": "stdio", "cases": [{"stdin": "x", "stdout": ""}]},
)


def warm_sandbox_paths(runs: int = WARM_RUNS) -> None:
    """Run the sandbox's side of a submission (:func:`.spawner.run_setup`: the program, its
    planned answers, a round trip) here in the worker, on our own pipes, before the fork server
    is forked from it.

    Why: each submission process is a copy of the fork server, which is a copy of this process.
    The first runs of a Python function write to it (CPython counts its calls, then specialises
    its bytecode in place) and to the interpreter's caches, and in a copy every page written is
    copied again (a fault each): code that never ran here ran cold in every submission. Warmed
    once, the submissions start from specialised code. Nothing of a task is in it: a fixed
    program of ours, whose namespace and answers are dropped; ``sys.stdin``/``stdout``/``stderr``
    are put back."""
    saved = sys.stdin, sys.stdout, sys.stderr
    compiled = policy.compile_submission(_WARM_PROGRAM)
    assert compiled.code is not None  # noqa: S101 - our own constant program
    blobs = []
    for spec in _WARM_SPECS:
        _, requests = _plan(spec)
        extra = dumps(call_request("f", [(1, 2.5)], {"y": "s"}))  # a round trip
        blobs.append(setup_blob(compiled.code, True, mode_of(spec), 1 << 16, requests) + extra)
    try:
        for _ in range(runs):
            for blob in blobs:
                _warm_run(blob)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def _warm_run(blob: bytes) -> None:
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    try:
        os.write(request_w, blob)  # far below a pipe's capacity, as are the answers
        os.close(request_w)
        run_setup(request_r, reply_w)
    finally:
        for fd in (request_r, reply_w, reply_r):
            os.close(fd)


def limit_judge_memory() -> None:
    """Cap this process's address space (soft ``RLIMIT_AS``) at what it maps now plus
    :data:`JUDGE_MEMORY_MB` (``RLVR_GYM_JUDGE_MEMORY_MB``, 0 = no cap). Read before the walls
    hide ``/proc``; the fork server and each submission set their own limits below it."""
    budget = int(os.environ.get(JUDGE_MEMORY_ENV, JUDGE_MEMORY_MB)) << 20
    if budget <= 0:
        return
    try:
        with open("/proc/self/statm") as handle:
            mapped = int(handle.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = mapped + budget
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or cap < soft:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


if __name__ == "__main__":
    sys.exit(main())
