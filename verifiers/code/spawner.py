"""The worker's fork server: a process that only forks sandboxes, so the judge never forks.

Why a second process: a submission process is a ``fork`` of whoever makes it, and after every
fork each page the parent writes is copied again (copy-on-write). The judge writes hundreds of
pages per submission (it runs the test code), so a judge that forks pays ~500 page faults per
submission on top of the child's own. The spawner is a fork of the worker taken once, right after
the walls are built; between forks it only reads a short message and reaps, so nearly none of its
pages are copied, and the worker, which no longer forks, stops faulting altogether.

Division of labour per submission (the worker is the judge):

* the worker makes the two pipes and sends the child's ends to the spawner (``SCM_RIGHTS`` over a
  private ``AF_UNIX`` socket pair), with the limits and the uid;
* the spawner forks the child (:func:`.sandbox.fork_sandbox`): it locks itself down, reads its
  program from the pipe (:func:`run_setup`: the worker's compiled code object, marshalled, and the
  requests planned ahead) and answers the judge as before (:func:`.runner.serve`);
* when the judge is done it closes its pipe ends and asks the spawner to close the sandbox: kill
  the child, reap it, sweep whatever it left (``kill(-1)`` as init of the submissions' own PID
  namespace, or the uid sweep), and report the child's exit status; the worker then replaces the
  working dir (:mod:`.workspace`), and the spawner enters the new one before its next fork.

The spawner stacks a second seccomp filter on itself at start (:func:`.syscalls.install_submission_filter`):
every submission inherits it, the worker, which cleans up after them, does not.

With namespaces the spawner is pid 1 of a PID namespace nested in the worker's: submissions see
neither the worker nor the host, cannot signal their init, and die with it.
"""

from __future__ import annotations

import contextlib
import fcntl
import marshal
import os
import signal
import socket
import struct
import types
from typing import Any

from rlvr_gym.error import (
    RunFailedError,
    SpawnerGoneError,  # noqa: F401 - defined with the whole tree
)
from rlvr_gym.verifiers.code import policy, syscalls
from rlvr_gym.verifiers.code.rootfs import landlock_scope_self
from rlvr_gym.verifiers.code.runner import serve
from rlvr_gym.verifiers.code.sandbox import (
    CHILD_REPLY_FD,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_PDEATHSIG,
    Limits,
    Sandbox,
    fork_sandbox,
    no_new_privs,
    prctl,
    reset_pid_counter,
)

_SETUP_HEADER = 8
MAX_MESSAGE = 4096


def setup_blob(
    code: types.CodeType,
    restricted: bool,
    mode: str,
    output_limit: int,
    requests: tuple[dict[str, Any], ...],
) -> bytes:
    """What the worker writes first into a new sandbox's request pipe: its program and plan.

    ``marshal`` carries the code object the worker compiled (and memoised) to the child, the one
    process that runs it, and the requests planned ahead, decoded (so the child does not load the
    JSON decoder for them); nothing the sandbox sends back is ever unmarshalled (replies are
    JSON).
    """
    body = marshal.dumps((code, bool(restricted), mode, int(output_limit), requests))
    return len(body).to_bytes(_SETUP_HEADER, "big") + body


def _read_exactly(fd: int, size: int) -> bytes:
    """``size`` bytes from a pipe, never more (what follows belongs to the next reader)."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the judge closed the pipe before the program arrived")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def run_setup(request_fd: int, reply_fd: int) -> None:
    """The sandbox child's body: read the program from the judge, then serve its requests."""
    size = int.from_bytes(_read_exactly(request_fd, _SETUP_HEADER), "big")
    code, restricted, mode, output_limit, ahead = marshal.loads(_read_exactly(request_fd, size))
    make_globals = policy.prepared_globals if restricted else policy.plain_globals
    serve(code, make_globals, mode, output_limit, request_fd, reply_fd, ahead)


class RemoteSandbox:
    """The worker's handle on one submission process that its spawner forked."""

    def __init__(self, spawner: Spawner, request_fd: int, reply_fd: int) -> None:
        self.spawner, self.request_fd, self.reply_fd = spawner, request_fd, reply_fd

    def close(self) -> int | None:
        """Close our pipe ends (the child sees EOF), then have the spawner kill, reap and sweep
        everything the submission started and wipe the private dirs; the child's wait status.

        Waits until all of that is done, so no process of a submission outlives its verdict.
        Raises :class:`RunFailedError` if the spawner could not fork the child at all (an
        infrastructure failure, not the submission's)."""
        for fd in (self.request_fd, self.reply_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        status, error = self.spawner.finish()
        if error:
            raise RunFailedError(f"could not start the sandbox process: {error}")
        return status


class Spawner:
    """Forks the fork server (once, after the walls) and talks to it over a socket pair."""

    def __init__(
        self,
        *,
        init: bool,
        worker_fds: tuple[int, ...] = (),
        scope: bool = False,
    ) -> None:
        """``init``: the spawner will be pid 1 of a fresh PID namespace (the caller unshared one).
        ``worker_fds``: the worker's own channels (to the pool), closed in the spawner so that
        only the worker holds them: the pool sees the worker's death as end-of-file at once.
        ``scope``: no PID namespace and no uid of its own (an ordinary user without namespaces):
        the spawner enters a Landlock signal scope of its own, so that ``kill(-1)`` from it
        reaches only the submission's processes, a grandchild that left its session included."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                ours.close()
                for fd in worker_fds:
                    os.close(fd)
                _serve(theirs, parent, init, scope)
            except BaseException:  # noqa: BLE001 - the fork server must never return into the worker
                code = 70
            finally:
                os._exit(code)
        theirs.close()
        self.pid, self.sock = pid, ours
        self.sock.set_inheritable(False)
        hello = self.sock.recv(MAX_MESSAGE)
        self.filter: str = hello.decode() if hello else "!the fork server exited at start"
        """What :func:`.syscalls.install_submission_filter` said, or why it failed (``!`` first)."""

    def spawn(
        self,
        limits: Limits,
        workdir: str | None,
        *,
        cwd: str = "",
        uid: int | None,
        block_sockets: bool,
        scope: bool,
    ) -> RemoteSandbox:
        """Start one sandbox process; the judge's ends of its pipes come back in the handle.
        ``cwd``: a directory the spawner enters before it forks (the child inherits it)."""
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        fields = tuple(getattr(limits, name) for name in limits.__slots__)
        message = marshal.dumps((fields, workdir, uid, block_sockets, scope, cwd))
        try:
            socket.send_fds(self.sock, [message], [request_r, reply_w])
        except OSError as exc:
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
            raise SpawnerGoneError(f"the sandbox spawner is gone ({exc})") from None
        os.close(request_r)
        os.close(reply_w)
        return RemoteSandbox(self, request_w, reply_r)

    def finish(self) -> tuple[int | None, str]:
        """Have the spawner close the current sandbox; its wait status and any spawn error."""
        try:
            self.sock.send(b"close")
            reply = self.sock.recv(MAX_MESSAGE)
        except OSError as exc:
            raise SpawnerGoneError(f"the sandbox spawner is gone ({exc})") from None
        if not reply:
            raise SpawnerGoneError("the sandbox spawner exited")
        status, error = marshal.loads(reply)  # from our own fork server, never from a sandbox
        return status, error

    def close(self) -> None:
        """Stop the spawner (it closes the last sandbox and exits on EOF) and reap it."""
        self.sock.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _serve(sock: socket.socket, parent: int, init: bool, scope: bool = False) -> None:
    """The fork server's loop: fork a sandbox per ``spawn``, close it on ``close``, until EOF."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if not init and os.getppid() != parent:  # (init's parent lies outside its namespace: ppid 0)
        return  # the worker died before the signal was armed; a later death closes the socket
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker decides when we stop
    if not init:  # as init we reap every orphan anyway; otherwise become their subreaper
        with contextlib.suppress(OSError):
            prctl(PR_SET_CHILD_SUBREAPER, 1)
    me = os.getpid()
    # what every sandbox would otherwise do for itself, each time paying copy-on-write faults
    devnull = _above_child_fds(os.open(os.devnull, os.O_RDWR))
    inherited_nnp = no_new_privs()
    scoped = False
    if scope:
        with contextlib.suppress(OSError):  # without it the sweep falls back to the process group
            landlock_scope_self()
            scoped = True
    try:
        sock.send(syscalls.install_submission_filter().encode())
    except (OSError, RuntimeError) as exc:
        sock.send(f"!{exc}".encode()[:MAX_MESSAGE])
    while True:
        message, fds = _receive(sock)
        if not message:
            return
        sandbox, error = _start(message, fds, init, me, devnull, not inherited_nnp, scoped)
        command = sock.recv(MAX_MESSAGE)
        status = sandbox.close() if sandbox is not None else None
        if not command:
            return
        sock.send(marshal.dumps((status, error)))


_FDS_SPACE = socket.CMSG_LEN(2 * 4)
_FD = struct.Struct("i")


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One spawn message and the pipe ends that came with it, renumbered above the child's fixed
    fds (the child moves them to 3 and 4 with no clash). ``socket.recv_fds`` without its import,
    array and comprehension: every object the fork server makes between two forks is a page
    written, so a copy-on-write fault, each time."""
    message, ancillary, _, _ = sock.recvmsg(MAX_MESSAGE, _FDS_SPACE)
    fds = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            for (fd,) in _FD.iter_unpack(data[: len(data) - len(data) % _FD.size]):
                fds.append(_above_child_fds(fd))
    return message, fds


def _above_child_fds(fd: int) -> int:
    """``fd`` renumbered above the child's fixed fds (0-4) if it is one of them."""
    if fd > CHILD_REPLY_FD:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


_LAST: list[Any] = [None, None]
"""The last spawn message and what it decoded to: a worker sends the same one for every
submission of a task kind (same limits, working dir and uid), and decoding it anew (a ``Limits``,
the arguments of :func:`.sandbox.fork_sandbox`) wrote pages that the submission then shared."""


def _decoded(
    message: bytes, init: bool, devnull: int, set_nnp: bool, scoped: bool
) -> tuple[Limits, str | None, str, dict[str, Any]]:
    if _LAST[0] != message:
        limits, workdir, uid, block_sockets, scope, cwd = marshal.loads(message)
        args = {
            "uid": uid,
            "block_sockets": block_sockets,
            "init": init,
            "scope": scope,
            "devnull": devnull,
            "set_no_new_privs": set_nnp,
            "scoped_sweep": scoped,
        }
        _LAST[:] = message, (Limits(*limits), workdir, cwd, args)
    return _LAST[1]


def _start(
    message: bytes, fds: list[int], init: bool, me: int, devnull: int, set_nnp: bool, scoped: bool
) -> tuple[Sandbox | None, str]:
    """Fork one sandbox from a spawn message; our copies of its pipe ends are closed after."""
    try:
        if len(fds) != 2:
            return None, f"expected 2 pipe ends, got {len(fds)}"
        limits, workdir, cwd, args = _decoded(message, init, devnull, set_nnp, scoped)
        if cwd:
            os.chdir(cwd)
        if init:
            reset_pid_counter()
        return fork_sandbox(run_setup, limits, workdir, fds[0], fds[1], parent=me, **args), ""
    except (OSError, ValueError, TypeError, EOFError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        for fd in fds:
            try:  # noqa: SIM105 - (no contextlib.suppress object on the fork server's path)
                os.close(fd)
            except OSError:
                pass
