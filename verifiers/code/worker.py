"""A warm worker: pre-imported, isolated once, judges one sandboxed process per submission.

Its fork server (:mod:`.spawner`), forked once after the walls are built, makes those processes:
the judge itself never forks, so its memory is never copied-on-write per submission.

Started by :class:`verifiers.code.pool.SandboxPool` as ``python -m verifiers.code.worker``; jobs
and outcomes travel as frames on its stdin/stdout. Being a separate program (not a fork of the
host) it inherits none of the host's threads, memory or open files, so what a submission's
fork inherits is small and known.
"""

from __future__ import annotations

import functools
import gc
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rlvr_gym.verifiers.code import policy
from rlvr_gym.verifiers.code.codec import ChannelClosed, FrameReader, dumps, write_frame
from rlvr_gym.verifiers.code.harness import (
    InvalidTests,
    Outcome,
    Session,
    judge,
    mode_of,
    plan_ahead,
    validate_tests,
)
from rlvr_gym.verifiers.code.sandbox import (
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
from rlvr_gym.verifiers.code.spawner import Spawner, SpawnerGone, setup_blob

CACHED_SOURCE_CHARS = 20_000


@functools.lru_cache(maxsize=256)
def _compile_cached(source: str, restricted: bool) -> policy.PolicyResult:
    return (policy.compile_submission if restricted else policy.compile_plain)(source)


def compile_job(source: str, restricted: bool) -> policy.PolicyResult:
    """The policy compile, memoised for short programs: GRPO groups often repeat a completion."""
    if len(source) > CACHED_SOURCE_CHARS:
        return (policy.compile_submission if restricted else policy.compile_plain)(source)
    return _compile_cached(source, restricted)


@dataclass(slots=True)
class Prepared:
    """A job checked and compiled, ready for a sandbox (the part that needs no sandbox)."""

    spec: Mapping[str, Any]
    limits: Limits
    workdir: str | None
    """Its own working dir, when the worker has no shared private one (removed after the job)."""
    ahead: list[bytes]
    setup: bytes


@dataclass(slots=True)
class Judged:
    """A job whose sandbox the fork server is closing: its outcome waits for the close to finish."""

    result: Outcome | dict[str, Any]
    """What the judge found, or the error outcome of a verifier bug while judging."""
    workdir: str | None


def prepare_job(job: Mapping[str, Any], isolation: Isolation) -> Prepared | dict[str, Any]:
    """Validate the tests and compile the program under the policy; an outcome when that decides it."""
    try:
        spec = validate_tests(job["tests"])
    except InvalidTests as exc:
        return {"status": "error", "errors": [str(exc)]}
    limits = Limits(**job.get("limits", {}))
    restricted = job.get("restricted", True)
    compiled = compile_job(job["source"], bool(restricted))
    if not compiled.ok:
        return {
            "status": "syntax" if compiled.syntax_error else "unsafe",
            "errors": list(compiled.errors)[:5],
        }
    workdir = None
    if not isolation.workdir:
        workdir = tempfile.mkdtemp(prefix="sandbox-")
        uid = sandbox_uid(isolation)
        if uid is not None:
            os.chown(workdir, uid, uid)
    ahead = [dumps(request) for request in plan_ahead(spec)]
    setup = setup_blob(compiled.code, bool(restricted), mode_of(spec), limits.output_bytes, ahead)
    return Prepared(spec, limits, workdir, ahead, setup)


def judge_job(job: Prepared, isolation: Isolation, spawner: Spawner) -> Judged:
    """Run one sandbox to the end of the tests and ask the fork server to close it (not waiting)."""
    deadline = time.monotonic() + job.limits.wall_s
    sandbox = spawner.spawn(
        job.limits,
        job.workdir,  # None: the shared one, entered once (enter_workdir)
        uid=sandbox_uid(isolation),
        block_sockets=isolation.network.startswith("no network namespace"),
        scope=isolation.scope_children,
    )
    try:
        result: Outcome | dict[str, Any] = judge(
            job.spec, Session(sandbox.request_fd, sandbox.reply_fd, deadline, job.ahead, job.setup)
        )
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - a verifier bug: reported once the sandbox is closed
        result = {"status": "error", "errors": [f"{type(exc).__name__}: {exc}"]}
    finally:
        sandbox.close()
    return Judged(result, job.workdir)


def finish_job(judged: Judged, spawner: Spawner) -> dict[str, Any]:
    """Wait until the fork server has killed, reaped and swept the job's sandbox; its outcome.

    Only then is the outcome sent: no process of a submission outlives its verdict."""
    try:
        status, error = spawner.collect()
    finally:
        if judged.workdir is not None:
            shutil.rmtree(judged.workdir, ignore_errors=True)
    if error:
        return {"status": "error", "errors": [f"could not start the sandbox process: {error}"]}
    if isinstance(judged.result, dict):
        return judged.result
    return {"status": "ran", **judged.result.as_dict(), "exit_status": status}


def run_job(job: Mapping[str, Any], isolation: Isolation, spawner: Spawner) -> dict[str, Any]:
    """Policy check, then one sandboxed process judged to the end; always returns an outcome."""
    prepared = prepare_job(job, isolation)
    if isinstance(prepared, dict):
        return prepared
    return finish_job(judge_job(prepared, isolation, spawner), spawner)


def supervise(worker: int) -> int:
    """The parent of the worker: a subreaper that reaps everything left when the worker dies.

    If the pool has to kill a wedged worker, its sandbox processes are orphaned; without this
    they would be re-parented to init, which in some containers never reaps them (zombies).
    Exits once the worker and every orphan are gone, with the worker's exit code.
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
            return code
        if pid == worker:
            code = os.waitstatus_to_exitcode(status)


def main() -> int:
    """Fork the worker under a reaping supervisor; serve jobs until the pool closes our stdin."""
    namespaces = enter_pid_namespace()
    pid_r, pid_w = os.pipe()
    worker = os.fork()
    if worker:
        os.write(pid_w, str(worker).encode())  # its pid as the host sees it
        os.close(pid_w)
        return supervise(worker)
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
    policy.prepare_globals("submission", "__main__")
    gc.collect()
    gc.freeze()  # forked children's GC then never touches (and copies) the worker's objects
    isolation = isolate_worker(namespaces, host_pid)
    if isolation.workdir:
        enter_workdir(isolation.workdir)
    if missing:
        isolation.notes.append(f"modules to preload that failed to import: {', '.join(missing)}")
    spawner = Spawner(init=isolation.spawner_init, private_dirs=tuple(isolation.private_dirs))
    write_frame(out_fd, {"isolation": isolation.as_dict(), "pid": host_pid})
    return serve_jobs(FrameReader(in_fd), out_fd, isolation, spawner)


def serve_jobs(jobs: FrameReader, out_fd: int, isolation: Isolation, spawner: Spawner) -> int:
    """Answer jobs in order until the pool closes our stdin; 1 if the fork server died.

    A job's sandbox is closed (killed, reaped, swept) by the fork server while this process
    already reads and compiles the next job, if one is waiting; the outcome is sent as soon as
    the close is done, and before anything of the next job.
    """
    judged: Judged | None = None
    try:
        while True:
            if judged is not None and not jobs.pending():
                write_frame(out_fd, finish_job(judged, spawner))
                judged = None
            try:
                job = jobs.read()
            except ChannelClosed:
                if judged is not None:
                    write_frame(out_fd, finish_job(judged, spawner))
                spawner.close()
                return 0
            prepared = _bug_as_outcome(prepare_job, job, isolation)
            if judged is not None:
                write_frame(out_fd, finish_job(judged, spawner))
                judged = None
            if not isinstance(prepared, Prepared):
                write_frame(out_fd, prepared)
                continue
            result = _bug_as_outcome(judge_job, prepared, isolation, spawner)
            if isinstance(result, Judged):
                judged = result
            else:
                write_frame(out_fd, result)
    except SpawnerGone as exc:  # nothing more can run here: answer, then let the pool replace us
        write_frame(out_fd, {"status": "error", "errors": [str(exc)], "retire": True})
        return 1


def _bug_as_outcome(step: Callable[..., Any], *args: Any) -> Any:
    """``step(*args)``, or an error outcome if it raised (a verifier bug: report it, keep serving)."""
    try:
        return step(*args)
    except (KeyboardInterrupt, SystemExit, SpawnerGone):
        raise
    except BaseException as exc:  # noqa: BLE001
        return {"status": "error", "errors": [f"{type(exc).__name__}: {exc}"]}


if __name__ == "__main__":
    sys.exit(main())
