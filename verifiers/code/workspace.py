"""The submissions' working dir: a fresh one per submission, and removal that no tree can stall.

A submission writes only below the worker's private dir (a tmpfs of its own, or one host folder
under Landlock). Its working dir is ``<private>/work``, made new for every submission and removed
after it — replaced, not wiped in place, so nothing about the old one (mode, extended attributes,
timestamps, inode) reaches the next submission — and anything else it left in the private dir
goes too.

Removal is iterative and relative to the current directory: one ``open``/``fchdir`` per level
and one ``unlink``/``rmdir`` per entry, so a chain of directories deeper than ``PATH_MAX`` or
Python's recursion limit costs time linear in its size (a recursive walk on full paths was cubic
in the depth and died at depth ~1000). It never follows a symlink or enters a mount point (a
runtime bound under a private ``/tmp``); the folders that lead to mount points stay.

With a mount namespace the private dir is ``/tmp``, a tmpfs of its own, replaced by a fresh one
for every submission (:func:`.rootfs.replace_tmp`): emptying it was not enough, its inode counter
carried on and was memory between submissions. Replacing it also costs less than a walk.

Without a tmpfs of its own (Landlock, the private dir on the host's disk) removal is not cheap:
with online discard each ``rmdir`` costs milliseconds, so a submission could make the cleanup
outlast any budget. There a dirty working dir is renamed to a locked trash folder (mode 000;
submissions cannot change modes) and removed a slice at a time between submissions, the rest by
the worker's supervisor when the worker is gone.
"""

from __future__ import annotations

import contextlib
import os
import time

from rlvr_gym.error import WorkspaceStuckError  # noqa: F401 - defined with the whole tree
from rlvr_gym.verifiers.code import rootfs

WORKDIR_NAME = "work"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _enter(name: str) -> bool:
    """``fchdir`` into the directory ``name`` here (no symlink); make it ours if its mode bars us."""
    try:
        fd = os.open(name, _DIR_FLAGS)
    except PermissionError:
        try:
            os.chmod(name, 0o700, follow_symlinks=False)
            fd = os.open(name, _DIR_FLAGS)
        except OSError:
            return False
    except OSError:
        return False
    try:
        os.fchdir(fd)
    finally:
        os.close(fd)
    return True


def _remove(name: str, is_dir: bool) -> bool:
    """Remove one entry of the current dir; ``False`` if it is a directory that is not empty."""
    remove = os.rmdir if is_dir else os.unlink
    try:
        remove(name)
    except PermissionError:  # our own dir's mode (0500) bars removal: take it back, once
        with contextlib.suppress(OSError):
            os.chmod(".", 0o700)
        try:
            remove(name)
        except OSError:
            return False
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _sweep(device: int) -> list[str]:
    """Remove every file and empty directory here; the other directories, to descend into."""
    deeper: list[str] = []
    with os.scandir(".") as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if is_dir and entry.stat(follow_symlinks=False).st_dev != device:
                    continue  # a mount point
            except OSError:
                continue
            if not _remove(entry.name, is_dir) and is_dir:
                deeper.append(entry.name)
    return deeper


def empty_tree(path: str, deadline: float | None = None) -> bool:
    """Remove everything below ``path`` (not ``path`` itself), iteratively; the cwd is kept.
    Stops at ``deadline`` (``time.monotonic()``); whether it got to the end."""
    try:  # (O_PATH: the cwd may be one Landlock hides; a trash folder we locked bars even that)
        back: int | None = os.open(".", os.O_PATH | os.O_CLOEXEC)
    except OSError:
        back = None
    try:
        if not _enter(path):
            return False
        device = os.stat(".").st_dev
        pending = [_sweep(device)]  # per level: the directories still to descend into
        names: list[str] = []  # the directories between ``path`` and the cwd
        while pending:
            if deadline is not None and time.monotonic() > deadline:
                return False
            if pending[-1]:
                name = pending[-1].pop()
                if _enter(name):
                    names.append(name)
                    pending.append(_sweep(device))
                continue
            pending.pop()
            if names:
                os.chdir("..")
                _remove(names.pop(), True)  # fails only where a mount point lies below
        return True
    finally:
        if back is None:
            os.chdir(path)
        else:
            os.fchdir(back)
            os.close(back)


def remove_tree(path: str) -> None:
    """``path`` and everything below it, as :func:`empty_tree` would (errors ignored)."""
    with contextlib.suppress(OSError):
        empty_tree(path)
        os.rmdir(path)


TRASH_SLICE_S = 0.02
"""Time spent removing trash after each submission (see the module)."""


class Workspace:
    """The private dir of one worker and its per-submission working dir ``<private>/work``.

    ``uid``: the submissions' own uid (when we are root), which gets the working dir; the
    private dir itself stays the worker's, so a submission cannot change its mode (where the
    submission has the worker's uid, the seccomp filter refuses it the metadata calls)."""

    def __init__(self, private: str, uid: int | None = None) -> None:
        self.private, self.uid = private, uid
        self.workdir = os.path.join(private, WORKDIR_NAME)
        # the minimal root's /tmp, a tmpfs of ours that rootfs.replace_tmp renews
        self.own_mount = private == "/tmp" and os.path.ismount(private) and os.path.isdir(rootfs.NEXT_TMP)
        self.trash: list[str] = []
        self.dirty = 0
        self._lock(writable=True)
        empty_tree(private)
        self._make()
        self.clean = self._usage()
        self._lock(writable=False)

    def _usage(self) -> tuple[int, int] | None:
        """Free blocks and inodes of our own tmpfs: unchanged since it was new means the
        submission left nothing there (every entry takes an inode)."""
        if not self.own_mount:
            return None
        usage = os.statvfs(self.private)
        return usage.f_bfree, usage.f_ffree

    def _make(self) -> None:
        os.mkdir(self.workdir, 0o700)
        if self.uid is not None:
            os.chown(self.workdir, self.uid, self.uid)

    def _lock(self, writable: bool) -> None:
        """Outside a reset the host folder is neither writable nor listable (the mode bits bind
        its owner too, and submissions cannot change them): a submission writes only in its
        working dir and sees no trash folder's name."""
        if not self.own_mount:
            os.chmod(self.private, 0o700 if writable else 0o711 if self.uid is not None else 0o100)

    def _to_trash(self) -> None:
        """Move the working dir out of the next submission's reach, to be removed later."""
        self.dirty += 1
        trash = os.path.join(self.private, f".trash-{self.dirty}")
        os.rename(self.workdir, trash)
        os.chmod(trash, 0)
        self.trash.append(trash)

    def _collect(self, deadline: float) -> None:
        while self.trash and time.monotonic() < deadline:
            if not empty_tree(self.trash[0], deadline):
                return
            os.rmdir(self.trash.pop(0))

    def reset(self) -> None:
        """After a submission (all its processes gone): remove its working dir and whatever else
        it left, and make the next one. Raises :class:`WorkspaceStuckError` if that fails."""
        try:
            if self.own_mount:  # all of it replaced (see the module)
                os.chdir("/")
                dirty = self._usage() != self.clean
                if dirty:  # freed now, not when the fork server lets go of the old one
                    empty_tree(self.private)
                rootfs.replace_tmp(dirty=dirty)
                self._make()
                self.clean = self._usage()
                os.chdir(self.workdir)
                return
            self._lock(writable=True)
            try:
                os.rmdir(self.workdir)  # outside it nothing is writable (the lock)
                clean = True
            except OSError:
                clean = False
            if not clean:
                self._to_trash()
            self._make()
            if self.trash:
                self._collect(time.monotonic() + TRASH_SLICE_S)
            self._lock(writable=False)
        except OSError as exc:
            raise WorkspaceStuckError(exc.errno, f"the working dir could not be replaced: {exc}") from None
