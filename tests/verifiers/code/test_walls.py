"""The OS walls hold with RestrictedPython off, as root and as an ordinary user (the escape
probes of tests/support/sandbox_probes.py)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sandbox_probes import run_all

ROOT = Path(__file__).resolve().parents[3]
PROBE_USER = "rlvr-sandbox-probe"
ATTACKS = (
    "read-etc-passwd", "read-data-file", "list-project-sources", "list-host-pids", "signal-a-host-pid", "kill-the-worker",
    "connect-127.0.0.1", "unshare-newuser", "ptrace-traceme", "mount-tmpfs", "mount-as-the-worker-may", "no-seccomp",
    "write-outside", "shell-reads-data", "system-python", "forged HumanEval/0 from the data file",
    "read-the-judges-memory", "kill-every-process", "find-an-answer-key", "a-process-was-left-behind",
    # channels between submissions, the judge's soft spots, what the verdict shows
    "leave-ipc-objects", "ipc-objects-were-left", "leave-marks-on-the-workdir", "marks-were-left-on-the-workdir",
    "touch-dev-null", "expected value in the details", "read-order-shows-the-outcome", "forged pass in 12 attempts",
    "colliding-set", "eight-mb-of-lists", "float-overflow", "deep-answer", "nest-the-workdir", "host folder left",
    # side channels: the outcome, counters and clocks that outlive a submission
    "computed-calls-show-the-outcome", "forged-stop-iteration", "inode-counter-remembers",
    "clock-phase-between-episodes", "read-the-package-data", "pid-counter-remembers",
    "pidfd-inode-remembers",
    # the submission's own objects in the tests, forged
    "pair-forged-eq-hash-repr", "pair-forged-pair-returned", "pair-int-subclass", "pair-str-subclass",
    "pair-forged-handle",
)  # fmt: skip
CONTROLS = (
    "control: canonical HumanEval/0", "control: honest code after the marks",
    "control: honest code after the judge's costs", "control: canonical Pair task",
)  # fmt: skip


def assert_walls_hold(results: dict) -> None:
    assert all(results[name] is True for name in CONTROLS), results  # the walls leave honest code working
    breached = [name for name in ATTACKS if results[name] is not False]
    assert not breached, (breached, results["isolation"])
    assert results["marker written"] is False
    leaked = results["leaked text"]
    assert "/etc" not in leaked and "xxxxx" in leaked and len(leaked) < 400, leaked
    isolation = results["isolation"]
    assert not isolation["missing"], isolation
    assert "seccomp" in isolation["seccomp"] and "PID namespace" in isolation["pid"]


@pytest.mark.slow
def test_walls_hold_for_the_user_running_the_tests():
    assert_walls_hold(run_all())


def _hidden_ancestor(path: str) -> str | None:
    """The top-most folder on ``path`` that other users cannot enter (``/root``, a 0700 mktemp
    dir holding a CI checkout), or ``None`` when an ordinary user can reach ``path``."""
    parts = Path(path).parts
    for depth in range(2, len(parts) + 1):
        folder = os.path.join(*parts[:depth])
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return folder
    return None


def _as_ordinary_user(*extra: str) -> list[str]:
    """argv prefix running a command as PROBE_USER (made here) in a mount namespace where the
    interpreter and this checkout (with its venv), if they sit in folders other users cannot
    enter (root's pyenv, a 0700 mktemp dir), are reachable read-only: an ordinary user would
    have a Python and a checkout of their own."""
    if subprocess.run(["id", PROBE_USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-M", "-r", "-s", "/usr/sbin/nologin", PROBE_USER], check=True)
    groups: dict[str, list[str]] = {}
    wanted = [os.path.realpath(sys.base_prefix), str(ROOT), os.path.realpath(sys.prefix), *extra]
    wanted = list(dict.fromkeys(wanted))
    for path in wanted:
        if any(path.startswith(other + "/") for other in wanted):
            continue  # inside another exposed path (the venv in the checkout)
        if (hidden := _hidden_ancestor(path)) is not None:
            groups.setdefault(hidden, []).append(path)
    expose = ""
    for n, (hidden, paths) in enumerate(groups.items()):
        stages = [f"s{n}_{i}" for i in range(len(paths))]
        expose += "".join(
            f"{s}=$(mktemp -d) && mount --bind {p} ${s} && " for s, p in zip(stages, paths, strict=True)
        )
        expose += f"mount -t tmpfs -o mode=0755 tmpfs {hidden} && "
        expose += "".join(
            f"mkdir -p {p} && mount --bind ${s} {p} && mount -o remount,bind,ro {p} && "
            for s, p in zip(stages, paths, strict=True)
        )
    setpriv = f"setpriv --reuid={PROBE_USER} --regid={PROBE_USER} --clear-groups --inh-caps=-all"
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'{expose}exec {setpriv} "$@"',
        "sh",
    ]


def _run_probes_as_ordinary_user(*args: str) -> dict:
    if os.geteuid() != 0:
        pytest.skip("running as an ordinary user already: the tests above cover this path")
    for tool in ("useradd", "setpriv", "unshare"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is needed to run the probes as another user")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": "/nonexistent"}
    data = []
    if "RLVR_GYM_DATA_DIR" in os.environ:  # its real path: a symlink in a hidden folder would vanish
        env["RLVR_GYM_DATA_DIR"] = os.path.realpath(os.environ["RLVR_GYM_DATA_DIR"])
        data.append(env["RLVR_GYM_DATA_DIR"])
    done = subprocess.run(
        [*_as_ordinary_user(*data), sys.executable, "-P", "-m", "tests.support.sandbox_probes", *args],
        capture_output=True, text=True, env=env, cwd="/", timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert "not root" in " ".join(results["isolation"]["notes"])  # it really ran unprivileged
    return results


@pytest.mark.slow
def test_walls_hold_for_an_ordinary_user():
    assert_walls_hold(_run_probes_as_ordinary_user())


FALLBACK_RESIDUAL = ("inode-counter-remembers", "pid-counter-remembers")
"""Open without namespaces, and said so in docs/sandbox.md: the working dir lies on the host's
disk (no fresh file system per submission without a mount namespace), whose inode allocator shows
what the last submission left; pids come from the host's counter (no PID namespace)."""


def assert_fallback_walls_hold(results: dict) -> None:
    """Without namespaces (RLVR_GYM_SANDBOX_NO_NAMESPACES): Landlock, seccomp and the uid hold
    every wall but :data:`FALLBACK_RESIDUAL`, and the missing namespaces are reported, not silent."""
    assert all(results[name] is True for name in CONTROLS), results
    breached = [name for name in ATTACKS if results[name] is not False and name not in FALLBACK_RESIDUAL]
    assert not breached, (breached, results["isolation"])
    assert results["marker written"] is False
    isolation = results["isolation"]
    assert isolation["filesystem"].startswith("Landlock") and "seccomp" in isolation["seccomp"]
    assert isolation["pid"] == "none" and any("switched off" in m for m in isolation["missing"])


def _needs_landlock() -> None:
    from rlvr_gym.verifiers.code.rootfs import landlock_abi

    if landlock_abi() < 6:
        pytest.skip("the no-namespace walls need Landlock ABI 6 (signal scoping) in this kernel")


@pytest.mark.slow
def test_walls_hold_without_namespaces():
    _needs_landlock()
    assert_fallback_walls_hold(run_all(namespaces=False))


@pytest.mark.slow
def test_walls_hold_without_namespaces_for_an_ordinary_user():
    _needs_landlock()
    assert_fallback_walls_hold(_run_probes_as_ordinary_user("--no-namespaces"))
