"""Layer 2 of the code sandbox: one fresh OS process per submission, locked down before it runs.

The *worker* (a long-lived, pre-imported process, see :mod:`rlvr_gym.verifiers.code.worker`) calls
:func:`isolate_worker` once, then starts its fork server (:mod:`.spawner`), which forks each
submission's child with :func:`fork_sandbox`:

* namespaces, made once per worker: a network namespace with no interfaces up (no network at
  all), an IPC namespace (no System V object or message queue of the host's), and a mount
  namespace with a minimal root whose only writable place is a private, size-capped ``/tmp``;
* per child: its own session/process group, a fresh working directory (:mod:`.workspace`), a scrubbed
  environment (``HOME`` is that directory), every inherited file descriptor closed but its two
  pipe ends, rlimits on CPU seconds, address space, file size, open files, processes and core
  dumps, ``no_new_privs``, a parent-death signal, and — when we are root — a user id of its own.

Why a uid of its own: ``RLIMIT_NPROC`` is not enforced for root, and a process group is no wall
(``setsid`` leaves it). A uid that nothing else uses makes ``RLIMIT_NPROC`` a real fork-bomb cap,
makes ``kill(-1, SIGKILL)`` from that uid remove *every* process the submission made in one
atomic sweep (:func:`kill_uid`), and stops the submission from signalling, tracing or reading
``/proc`` of the worker or the host.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import resource
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from rlvr_gym.verifiers.code import rootfs, syscalls

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWIPC = 0x08000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
PR_GET_NO_NEW_PRIVS = 39
_SIGKILL = int(signal.SIGKILL)  # a plain int: the enum member's lookup writes pages in every child

NO_NAMESPACES_ENV = "RLVR_GYM_SANDBOX_NO_NAMESPACES"
"""Set to ``1`` to build the walls without namespaces (Landlock, seccomp, uid), as on a machine
that allows none: for testing that fallback where namespaces exist (see :func:`enter_pid_namespace`)."""

JUDGE_MEMORY_ENV = "RLVR_GYM_JUDGE_MEMORY_MB"
"""Megabytes of address space the judge (the worker) may add after start-up; ``0``: no cap."""

HOST_PID = 0
"""This worker's pid as the host sees it (set by :func:`isolate_worker`; inside its PID namespace
the worker is pid 1)."""

UID_BASE = 1_000_000
"""Sandbox uids are ``UID_BASE + worker pid``: unused by any account, unique per live worker."""

CHILD_REQUEST_FD, CHILD_REPLY_FD = 3, 4

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits for one submission. Defaults suit HumanEval-sized problems."""

    wall_s: float = 5.0
    cpu_s: int = 5
    memory_bytes: int = 1 << 30
    file_bytes: int = 8 << 20
    open_files: int = 32
    processes: int = 8
    output_bytes: int = 1 << 20


LAYERS: dict[str, str] = {
    "filesystem": "what the submission can read and write: a minimal read-only root, or Landlock",
    "pid": "a PID namespace of the worker's own: no host process seen, none outlives it",
    "network": "a network namespace with no interface up",
    "ipc": "an IPC namespace of the worker's own; System V and POSIX queues refused by seccomp",
    "seccomp": "the system-call filter",
    "uid": "as root, an unprivileged uid per worker",
}
"""The sandbox's layers, in the order every report lists them, with what each is: the one list
``Isolation.as_dict``, ``rlvr-gym sandbox-info`` (here and on every Ray node) and the docs read."""


@dataclass(slots=True)
class Isolation:
    """Which mechanisms are active in this worker (reported in verdict details and the bench)."""

    host_pid: int = 0
    network: str = "none"
    ipc: str = "none"
    filesystem: str = "the host's, unrestricted"
    pid: str = ""
    seccomp: str = ""
    uid: str = "same uid as the worker"
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    private_dirs: list[str] = field(default_factory=list)
    workdir: str = ""
    """Every submission's working dir (``<private>/work``), made fresh for each one
    (:class:`.workspace.Workspace`); empty when there is no private dir."""
    spawner_init: bool = False
    """Whether the fork server is init of a PID namespace of the submissions' own (nested in the
    worker's): then ``kill(-1)`` from it sweeps exactly what the submission left."""
    scope_children: bool = False
    """Whether each submission enters a nested Landlock domain that cannot signal the worker or its
    fork server (needed only when neither a PID namespace nor a uid of its own protects them)."""

    def as_dict(self) -> dict[str, object]:
        """Each of :data:`LAYERS` (``"none"`` where it is not up), then what is missing and notes."""
        layers = {name: getattr(self, name) or "none" for name in LAYERS}
        return {**layers, "missing": list(self.missing), "notes": list(self.notes)}


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl({option})")


def enter_pid_namespace() -> str:
    """Called by the worker's supervisor before it forks the worker: the worker becomes pid 1 of a
    new PID namespace, so it sees no host process, and when it dies every process left in the
    namespace dies with it. Without root, a user namespace (one uid mapped to itself) grants the
    right to do so. Returns ``"root"``, ``"user"`` or the reason there is no namespace.
    """
    if os.environ.get(NO_NAMESPACES_ENV, "") not in ("", "0"):
        return f"namespaces switched off by {NO_NAMESPACES_ENV}"
    if os.geteuid() == 0:
        try:
            _unshare(CLONE_NEWPID)
        except OSError as exc:
            return f"no PID namespace as root: {exc}"
        return "root"
    uid, gid = os.getuid(), os.getgid()
    try:
        _unshare(CLONE_NEWUSER | CLONE_NEWPID)
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError as exc:
        return f"no user namespace for this user: {exc}"
    return "user"


def isolate_worker(namespaces: str, host_pid: int, host_dir: str) -> Isolation:
    """Build every wall in this worker, once, so no submission pays for it; report what is active.

    ``namespaces`` is what :func:`enter_pid_namespace` got. With it: private network, IPC and
    mount namespaces and a minimal read-only root (:mod:`.rootfs`). Without it: Landlock and an
    audit hook. Last, the seccomp filter (:mod:`.syscalls`), inherited by every submission. A layer
    that cannot be had is listed in ``missing``, never skipped silently.

    ``host_dir``: an empty folder in the host's ``/tmp`` that the worker's supervisor made and
    removes when the worker is gone: the mount point of the minimal root, or (without a mount
    namespace) the private dir itself. A worker cannot remove it itself (after ``pivot_root`` the
    host tree is out of its reach), and a killed one would leave it behind.
    """
    global HOST_PID
    HOST_PID = host_pid
    report = Isolation(host_pid=host_pid)
    if namespaces not in ("root", "user"):
        report.missing.append(f"pid namespace: {namespaces}")
    else:
        open_last_pid()  # before the host's /proc is gone
        try:
            _unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC)
            report.network = "network namespace (no interfaces up)"
            report.ipc = "IPC namespace of the worker's own"
            report.filesystem = rootfs.pivot_to_minimal_root(host_dir)
            report.private_dirs = ["/tmp"]
        except OSError as exc:
            report.missing.append(f"mount/network namespace: {exc}")
        try:  # the next process forked, the fork server, is init of the submissions' own one
            _unshare(CLONE_NEWPID)
            report.spawner_init = True
            report.pid = (
                "PID namespace of the submissions' own, nested in the worker's (their fork server "
                "is its init; host processes and the judge invisible)"
            )
            if LAST_PID_FD >= 0:
                report.pid += "; every submission starts at the same pid"
            else:
                report.notes.append("pid counter not reset per submission: no /proc/sys/kernel/ns_last_pid")
        except OSError as exc:
            report.pid = "PID namespace (the worker is its init; host processes invisible)"
            report.notes.append(f"no nested PID namespace for the submissions: {exc}")
    if not report.private_dirs:
        private = host_dir
        try:
            report.filesystem = rootfs.landlock_runtime_only(private)
            report.private_dirs = [private]
            report.missing.append(
                "size cap on the working dir: without a mount namespace it is a plain directory, "
                "bounded only by RLIMIT_FSIZE per file and the wall-clock limit"
            )
            if os.geteuid() == 0:  # the worker's; each working dir below it is the submission's
                os.chmod(private, 0o711)
            elif not report.pid and rootfs.landlock_abi() < 6:  # same uid, host pids visible
                report.missing.append(
                    "signal wall: Landlock below ABI 6 cannot stop signals to this user's processes"
                )
            elif not report.pid:  # same uid as the worker, which is no namespace's init
                report.scope_children = True
                report.notes.append(
                    "each submission in a nested Landlock domain: cannot signal the worker or its fork server"
                )
        except OSError as exc:
            report.missing.append(f"filesystem wall (Landlock): {exc}")
    report.workdir = os.path.join(report.private_dirs[0], "work") if report.private_dirs else ""
    if os.geteuid() == 0:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        report.uid = f"one unprivileged uid per worker ({UID_BASE} + worker pid), rlimit NPROC enforced"
    else:
        with contextlib.suppress(OSError):
            prctl(PR_SET_CHILD_SUBREAPER, 1)
        report.notes.append(
            "not root: no per-submission uid, RLIMIT_NPROC counts all of this user's processes"
        )
    if report.network == "none":
        report.network = (
            "no network namespace: sockets refused by an audit hook in the child (and by the "
            "seccomp filter and Landlock's TCP rules where active)"
        )
        report.missing.append("network namespace")
    prctl(PR_SET_DUMPABLE, 0)  # the worker's memory is not readable through /proc or ptrace
    try:
        report.seccomp = syscalls.install()
    except (OSError, RuntimeError) as exc:
        report.missing.append(f"seccomp: {exc}")
    if report.ipc == "none" and report.seccomp:
        report.ipc = "no IPC namespace: System V IPC and POSIX message queues refused by seccomp"
    elif report.ipc == "none":
        report.missing.append("IPC wall: no IPC namespace and no seccomp filter")
    elif report.seccomp:
        report.ipc += "; System V IPC and POSIX message queues refused by seccomp"
    return report


LAST_PID_FD = -1
"""``/proc/sys/kernel/ns_last_pid``, opened by the worker before its walls (``-1``: not open). The
fork server, init of the submissions' PID namespace, writes it before every fork
(:func:`reset_pid_counter`): pids are handed out from a counter, and one that carried on was
memory between submissions (fork ``k`` times; the next submission's pid is ``k`` higher)."""


def open_last_pid() -> None:
    """Open :data:`LAST_PID_FD` (kept above the child's fixed fds; a child closes it at start)."""
    global LAST_PID_FD
    try:
        fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return
    LAST_PID_FD = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)


def reset_pid_counter() -> None:
    """Make the next fork get pid 2 of the caller's PID namespace, the one after its init (the
    last submission's processes are all reaped by now); a no-op where the counter is not ours."""
    if LAST_PID_FD >= 0:
        try:  # noqa: SIM105 - (no contextlib.suppress object on the fork server's path)
            os.pwrite(LAST_PID_FD, b"1", 0)
        except OSError:
            pass


def sandbox_uid(isolation: Isolation) -> int | None:
    """The uid this worker's submissions run as (``None`` when not root: we cannot switch).

    Made from the worker's pid as the *host* sees it (inside its PID namespace it is 1)."""
    return UID_BASE + isolation.host_pid if os.geteuid() == 0 else None


def _block_sockets() -> None:
    """Last-resort network wall when no namespace was available (weaker: an in-process hook)."""

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event.startswith("socket."):
            raise PermissionError("network access is disabled in the sandbox")

    sys.addaudithook(hook)


def sandbox_environment(workdir: str) -> dict[str, str]:
    """The whole environment a submission sees: nothing of the host's, its working dir as home."""
    return {"PATH": "/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8", "TMPDIR": workdir}


def enter_workdir(workdir: str) -> None:
    """Make the worker's own cwd, umask and environment what every submission needs, once.

    Used when every submission of this worker works in ``<private>/work`` (:attr:`Isolation.workdir`,
    a new directory each time, always at that path): children then inherit them (the fork server
    enters each new one before it forks), and :func:`fork_sandbox` with ``workdir=None`` skips setting them per
    child (rebuilding ``os.environ`` after fork was ~0.3 ms of page faults per submission). The
    worker needs none of its own environment after start-up: it execs nothing.
    """
    os.chdir(workdir)
    os.umask(0o077)
    os.environ.clear()
    os.environ.update(sandbox_environment(workdir))


def no_new_privs() -> bool:
    """Whether ``no_new_privs`` is set on this process already (the seccomp filter and Landlock
    set it in the worker; every child inherits it and none can unset it)."""
    return _libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1


def _lock_down(
    limits: Limits,
    uid: int | None,
    workdir: str | None,
    request_fd: int,
    reply_fd: int,
    block_sockets: bool,
    parent: int,
    scope: bool = False,
    *,
    devnull: int | None = None,
    death_signal: bool = True,
    set_no_new_privs: bool = True,
) -> None:
    """Everything the child does to itself before any submission code runs.

    Runs in every sandbox, so it touches as little as it can: each page of the fork server's
    memory it writes is copied for this child (a ``ctypes`` call alone costs ~50 such faults).
    ``devnull``: an open ``/dev/null`` of the parent's; ``death_signal=False`` when the parent is
    init of the child's PID namespace (its death kills the child anyway); ``set_no_new_privs=False``
    when it is inherited already (:func:`no_new_privs`)."""
    os.setsid()
    if request_fd <= CHILD_REPLY_FD or reply_fd <= CHILD_REPLY_FD:
        # via fds above the targets, so neither dup2 can clobber the other pipe end
        request_fd, reply_fd = (
            fcntl.fcntl(request_fd, fcntl.F_DUPFD, 10),
            fcntl.fcntl(reply_fd, fcntl.F_DUPFD, 10),
        )
    os.dup2(request_fd, CHILD_REQUEST_FD)
    os.dup2(reply_fd, CHILD_REPLY_FD)
    if devnull is None:
        devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(CHILD_REPLY_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    if workdir is not None:  # else the worker did it once (enter_workdir)
        os.chdir(workdir)
        os.umask(0o077)
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if set_no_new_privs:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
    if scope:
        rootfs.landlock_scope_self()
    if death_signal:
        prctl(PR_SET_PDEATHSIG, _SIGKILL)  # after setuid: a uid change clears it
    if os.getppid() != parent:  # the fork server died while we were setting up
        os._exit(70)
    if workdir is not None:
        os.environ.clear()
        os.environ.update(sandbox_environment(workdir))
    if block_sockets:
        _block_sockets()


@dataclass(slots=True)
class Sandbox:
    """The fork server's handle on one running submission process (the judge holds the pipes)."""

    pid: int
    uid: int | None
    init: bool = False
    """Whether the fork server is init of the submissions' PID namespace: then ``kill(-1)``
    reaches exactly the submission's processes, whatever uid or session they moved to."""
    scoped: bool = False
    """Whether the fork server sits in a Landlock signal scope of its own with the submission in
    one nested below it (no namespaces, no uid of its own): ``kill(-1)`` then reaches only the
    submission's processes too (signals out of a scope are refused)."""

    def close(self) -> int | None:
        """Kill every process of the submission and reap them; the child's status.

        Fast path: kill the child and reap it; if we (the subreaper) then have no children at
        all, the submission left no descendants — every one would have been re-parented to us.
        Otherwise sweep its uid with :func:`kill_uid` and reap until nothing is left.
        """
        # try/except, not contextlib.suppress: no object made on the fork server's path
        try:  # noqa: SIM105
            os.kill(self.pid, _SIGKILL)
        except ProcessLookupError:
            pass
        status = None
        try:  # noqa: SIM105
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        if has_children():
            if self.init or self.scoped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(-1, signal.SIGKILL)
                reap_orphans(block=True)
                return status
            if self.uid is not None:
                kill_uid(self.uid)
            else:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            reap_orphans(block=self.uid is not None)
        return status


def has_children() -> bool:
    """Whether this process has any child, alive or not yet reaped."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


FORK_WITHOUT_HOOKS = (
    sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11) and hasattr(_libc, "fork")
)
"""Fork sandboxes with libc's ``fork`` instead of :func:`os.fork` — only on the CPython we test it on.

:func:`os.fork` runs CPython's after-fork work in the child: re-creating the locks other threads
may have held, and the ``os.register_at_fork`` hooks (``threading`` rebuilding its thread table,
``random`` reseeding, ``logging`` re-creating its locks). The fork server has one thread and holds
none of those locks when it forks, so none of it is needed; in the worker's image it cost ~0.7 ms
of the child's CPU and ~185 of its copy-on-write faults per sandbox (``bench/README.md``). One
visible difference: ``random`` is not reseeded, so a submission that does not seed it starts from
its fork server's state (the same sequence on every run on that worker)."""


def fork_without_hooks() -> int:
    """``fork(2)`` through ctypes, which releases the GIL around the call: the child takes it back
    as the only thread there is. Only for a single-threaded caller; raises ``OSError`` on failure."""
    if threading.active_count() != 1:
        return os.fork()
    pid = _libc.fork()
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"fork: {os.strerror(err)}")
    return pid


def fork_sandbox(
    run: Callable[[int, int], None],
    limits: Limits,
    workdir: str | None,
    request_r: int,
    reply_w: int,
    *,
    parent: int,
    uid: int | None,
    block_sockets: bool = False,
    init: bool = False,
    scope: bool = False,
    devnull: int | None = None,
    set_no_new_privs: bool = True,
    scoped_sweep: bool = False,
) -> Sandbox:
    """Fork a locked-down child that calls ``run(request_fd, reply_fd)`` on the given pipe ends
    (as fds 3 and 4) and never returns. The caller keeps its copies of the two ends to close.

    Called by the worker's fork server (:mod:`.spawner`); ``parent`` is its own pid, which the
    child checks after arming its parent-death signal. ``workdir=None``: the worker already sits
    in the working dir with the submission's environment (:func:`enter_workdir`), which the
    fork server and so the child inherit. ``devnull`` and ``set_no_new_privs``: see
    :func:`_lock_down`; the parent-death signal is armed unless the caller is init (``init``).
    ``scoped_sweep``: the caller is in a Landlock signal scope of its own (see :attr:`Sandbox.scoped`)."""
    pid = fork_without_hooks() if FORK_WITHOUT_HOOKS else os.fork()
    if pid == 0:  # the child: nothing here may return into the fork server's code
        code = 71
        try:
            _lock_down(
                limits, uid, workdir, request_r, reply_w, block_sockets, parent, scope,
                devnull=devnull, death_signal=not init, set_no_new_privs=set_no_new_privs,
            )  # fmt: skip
            code = 0
            run(CHILD_REQUEST_FD, CHILD_REPLY_FD)
        except BaseException:  # noqa: BLE001 - the child must exit, whatever happened
            pass
        finally:
            os._exit(code)
    return Sandbox(pid, uid, init, scoped=scope and scoped_sweep)


def kill_uid(uid: int) -> None:
    """SIGKILL every process running as ``uid``, atomically: ``kill(-1)`` with that uid as ours.

    ``kill(-1)`` walks the process table under a lock that ``fork`` also needs, so a fork bomb
    cannot outrun it. The fork server keeps a saved uid of 0 and switches straight back.
    """
    os.setresuid(uid, uid, 0)
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        os.setresuid(0, 0, 0)


def reap_orphans(*, block: bool) -> None:
    """Collect every descendant re-parented to us (we are the children's subreaper).

    ``block=True`` after :func:`kill_uid`: everything is dying, so waiting until no child is
    left proves none survived. Without a uid sweep we only collect what already exited.
    """
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        if pid == 0:
            return
