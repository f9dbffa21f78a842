"""Side channels between submissions, piece by piece: the part that closes each one.

The three-mode probes (``tests/support/sandbox_probes.py``, ``tests/verifiers/code/test_walls.py``) show each
channel closed end to end; the wheel-install test (``tests/verifiers/code/test_wheel_install.py``) the
package data. These name the part, so a regression points at its cause.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import rlvr_gym
from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.code import CodeVerifier, Limits, SandboxPool, policy, rootfs
from rlvr_gym.verifiers.code.harness import _rebuild
from rlvr_gym.verifiers.code.tool import PythonTool
from tests.support.code import fenced
from tests.support.sandbox_probes import (
    INODE_RECEIVER,
    INODE_SENDER,
    ORACLE,
    ORACLE_TESTS,
    PID_RECEIVER,
    PID_SENDER,
    PIDFD_RECEIVER,
    STOP_ITERATION,
    STOP_ITERATION_TESTS,
)

FAST = Limits(wall_s=3.0, cpu_s=2)


def test_which_computed_calls_arrive_does_not_follow_the_asserts():
    """Case 0 fails its first assert; its next call (computed argument) must still arrive, and
    the verdicts stay what a stopping test gave: case 0 failed, on its assert."""
    with SandboxPool(1) as pool:
        verdict = CodeVerifier(limits=FAST, pool=pool, restricted=False)(
            fenced(ORACLE), {"tests": ORACLE_TESTS}
        )
    assert verdict.score == 0.5 and verdict.reason is Reason.WRONG_ANSWER, verdict
    assert verdict.details["failures"][0].startswith("test 0: AssertionError"), verdict.details


def test_a_submissions_stop_iteration_fails_its_call():
    assert type(_rebuild({"exc": "StopIteration", "msg": ""})) is RuntimeError
    assert type(_rebuild({"exc": "StopAsyncIteration", "msg": ""})) is RuntimeError
    assert type(_rebuild({"exc": "ValueError", "msg": "x"})) is ValueError
    with SandboxPool(1) as pool:
        verifier = CodeVerifier(limits=FAST, pool=pool, restricted=False)
        verdict = verifier(fenced(STOP_ITERATION), {"tests": STOP_ITERATION_TESTS})
        honest = verifier(fenced("def f(x):\n    return x * x\n"), {"tests": STOP_ITERATION_TESTS})
    assert verdict.reason is Reason.WRONG_ANSWER and "StopIteration" in str(verdict.details), verdict
    assert honest.passed, honest


def test_each_submission_gets_a_tmp_with_fresh_inode_numbers():
    with SandboxPool(1) as pool:
        tool = PythonTool(limits=FAST, pool=pool, restricted=False)
        if not pool.isolation["filesystem"].startswith("minimal root"):
            pytest.skip("no mount namespace here: the fallback's residual (docs/sandbox.md)")
        seen = []
        for count in (0, 30, 0):
            assert (
                tool.run(INODE_SENDER.format(count) + "open('/tmp/also-here', 'w').close()\n").status == "ok"
            )
            seen.append(tool.run(INODE_RECEIVER).output)
        files = tool.run("import os\nprint(sorted(os.listdir('/tmp')))").output  # and nothing was left
    assert seen[0] and seen[0] == seen[1] == seen[2], seen
    assert "also-here" not in files and "work" in files, files  # (a runtime under /tmp may show too)


def test_each_submission_starts_at_the_same_pid():
    with SandboxPool(1) as pool:
        if "PID namespace of the submissions' own" not in pool.isolation["pid"]:
            pytest.skip("no PID namespace of the submissions' own here (the fallback's residual)")
        tool = PythonTool(limits=FAST, pool=pool, restricted=False)
        pids = []
        for count in (0, 25, 3):
            assert tool.run(PID_SENDER.format(count)).status == "ok"
            pids.append(tool.run(PID_RECEIVER).output)
    assert pids[0] and pids[0] == pids[1] == pids[2], pids


def test_a_submission_cannot_open_a_pidfd():
    """A pidfd's inode number counts every fork on the host: refused, in every mode."""
    with SandboxPool(1) as pool:
        tool = PythonTool(limits=FAST, pool=pool, restricted=False)
        assert tool.run(PID_SENDER.format(3)).status == "ok"  # forking itself still works
        assert tool.run(PIDFD_RECEIVER).output.strip() == "refused"


def test_the_policys_datetime_reads_elapsed_time_only(monkeypatch):
    from rlvr_gym.verifiers.code import clock

    monkeypatch.setattr(clock, "_START", [])  # as in a fresh sandbox
    module = policy._guarded_import("datetime")
    assert module is clock.datetime_module()
    first = module.datetime.now()
    assert (first.hour, first.minute, first.second) == (0, 0, 0) and first.microsecond < 50_000
    derived = type(module.date(2000, 1, 1) + module.timedelta(days=1))  # a class no C type reaches
    assert derived.today() == first.date() and type(module.datetime.min).now().date() == first.date()
    assert module.datetime(2024, 5, 3).strftime("%A") == "Friday"  # the calendar is untouched


def test_the_package_itself_is_never_shown_to_a_submission():
    """Whatever folder ``rlvr_gym`` was imported from (site-packages for a wheel), it is not one
    of the loaded packages the minimal root or Landlock shows."""
    folder = str(Path(rlvr_gym.__file__).resolve().parents[1])
    shown = {os.path.basename(p) for p in rootfs.loaded_packages([folder, *sys.path[:1]])}
    assert rootfs.OWN_PACKAGE == "rlvr_gym" and "rlvr_gym" not in shown, shown
