"""The seccomp layer of the code sandbox: syscalls no submission needs are refused by the kernel.

Loaded once into the worker after it has built its walls (namespaces, root, mounts), so every
submission process forked from it inherits the filter at no per-submission cost, and neither the
worker nor a submission can undo what the walls did (no bind or remount, ``unshare``, ``setns``...).
Built with libseccomp through ``pyseccomp`` (a ctypes binding; no compiler needed). Refused:

* escaping or changing the walls: ``unshare``, ``setns``, ``clone``/``clone3`` with namespace flags,
  ``mount`` and ``umount2`` but in the forms the worker uses (:data:`MOUNTS`; refused outright
  to submissions), the new mount API, ``pivot_root``, ``chroot``;
* reaching other processes or the kernel: ``ptrace``, ``process_vm_*``, ``bpf``, ``keyctl``,
  ``perf_event_open``, ``kexec_*``, module loading, ``userfaultfd``, ``io_uring_*``, ...;
* running programs (``execve``/``execveat``): a submission is Python code in this process;
* sockets other than ``AF_UNIX`` (there is no network in the sandbox either way);
* System V IPC (shared memory, message queues, semaphores) and POSIX message queues: objects
  that outlive the process that made them, so a channel from one submission to the next (and
  shared memory outside every rlimit). The worker's IPC namespace hides the host's; refusing the
  calls also closes the channel between the submissions of one worker, and holds without a
  namespace.

:func:`install_submission_filter` stacks a second filter on the fork server, inherited by every
submission but not by the worker: the calls that change a file's metadata (mode, extended
attributes, timestamps), ``mount``/``umount2`` and pidfds (:data:`PIDFDS`). Landlock does not govern them, so without it a submission could change
the host's files it can name (``/dev/null``'s timestamps) or its working dir's, a channel to the
next submission; the worker keeps them, to clean up after a submission.
"""

from __future__ import annotations

import contextlib
import errno

try:
    import pyseccomp as seccomp
except (ImportError, OSError) as exc:  # libseccomp.so.2 missing: reported, never silent
    seccomp = None
    IMPORT_ERROR = f"{type(exc).__name__}: {exc}"
else:
    IMPORT_ERROR = ""

REFUSED = (
    "unshare", "setns", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
    "fspick", "move_mount", "open_tree", "mount_setattr", "ptrace", "process_vm_readv",
    "process_vm_writev", "bpf", "keyctl", "add_key", "request_key", "perf_event_open", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at",
    "name_to_handle_at", "swapon", "swapoff", "reboot", "syslog", "acct", "quotactl",
    "settimeofday", "clock_settime", "adjtimex", "iopl", "ioperm", "lookup_dcookie",
    "execve", "execveat",
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semtimedop", "semctl", "ipc", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr",
)  # fmt: skip
METADATA = (
    "chmod", "fchmod", "fchmodat", "fchmodat2", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
    "lremovexattr", "fremovexattr", "setxattrat", "removexattrat", "utime", "utimes", "futimesat",
    "utimensat",
)  # fmt: skip
"""Refused to submissions only (:func:`install_submission_filter`)."""
PIDFDS = ("pidfd_open",)
"""Refused to submissions, with ``clone``'s ``CLONE_PIDFD``: a pidfd's inode number comes from a
kernel-wide counter that every fork moves on, so it showed how many processes the previous
submission had made."""
CLONE_PIDFD = 0x00001000
MOUNTS = ("mount", "umount2")
"""Refused to submissions; the worker keeps what it needs to give every submission a fresh
``/tmp`` (:func:`.rootfs.replace_tmp`): ``mount`` with no flag but ``MS_NOSUID``, ``MS_NODEV`` and
``MS_MOVE`` (no bind, no remount, no propagation change) and ``umount2`` with exactly ``MNT_DETACH``."""
WORKER_MOUNT_FLAGS, WORKER_UMOUNT_FLAGS = 0x2 | 0x4 | 0x2000, 0x2
NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
AF_UNIX = 1


def install() -> str:
    """Load the filter into this process (and so every later child). Returns what is active.

    Raises ``OSError``/``RuntimeError`` when libseccomp is missing or refuses; the caller
    reports that as a missing layer.
    """
    if seccomp is None:
        raise RuntimeError(f"pyseccomp/libseccomp unavailable ({IMPORT_ERROR})")
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = _filter()
    _refuse_all(rules, refuse, REFUSED)
    for bit in range(64):  # any flag outside WORKER_MOUNT_FLAGS
        if not WORKER_MOUNT_FLAGS & 1 << bit:
            rules.add_rule(refuse, "mount", seccomp.Arg(3, seccomp.MASKED_EQ, 1 << bit, 1 << bit))
    rules.add_rule(refuse, "umount2", seccomp.Arg(1, seccomp.NE, WORKER_UMOUNT_FLAGS))
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory, where a filter cannot look: ENOSYS makes glibc fall
    # back to clone(2), whose flags the rules above do check (the same choice Docker makes).
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.NE, AF_UNIX))
    rules.load()  # sets no_new_privs first (libseccomp's default), so no root is needed
    return (
        f"seccomp filter (libseccomp): {len(REFUSED)} syscalls (System V IPC and POSIX message "
        "queues among them), namespace clone flags, non-unix sockets refused"
    )


def _filter() -> object:
    """An allow-by-default filter, compiled as a binary tree where libseccomp can (2.5+): every
    syscall of every submission runs through it, and a linear filter compares it with each rule."""
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    with contextlib.suppress(ValueError, RuntimeError, OSError, AttributeError):
        rules.set_attr(seccomp.Attr.CTL_OPTIMIZE, 2)
    return rules


def _refuse_all(rules: object, refuse: object, names: tuple[str, ...]) -> None:
    for name in names:
        try:
            rules.add_rule(refuse, name)  # type: ignore[attr-defined]
        except (ValueError, RuntimeError, OSError):  # a syscall this architecture (or libseccomp) lacks
            continue


def install_submission_filter() -> str:
    """Stack the metadata filter (:data:`METADATA`) on this process: the fork server calls it once,
    so every submission inherits it at no cost per fork. Raises like :func:`install`."""
    if seccomp is None:
        raise RuntimeError(f"pyseccomp/libseccomp unavailable ({IMPORT_ERROR})")
    rules = _filter()
    refuse = seccomp.ERRNO(errno.EPERM)
    _refuse_all(rules, refuse, METADATA + MOUNTS + PIDFDS)
    rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_PIDFD, CLONE_PIDFD))
    rules.load()
    return "file metadata calls (chmod, xattrs, timestamps), mount/umount2 and pidfds refused to submissions"
