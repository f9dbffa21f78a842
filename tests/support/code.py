"""Helpers shared by the code-sandbox tests: the data folder, host checks, completions."""

from __future__ import annotations

import os
from pathlib import Path

from rlvr_gym.envs.code_env import fenced  # noqa: F401 - re-exported for the tests
from rlvr_gym.verifiers.code.sandbox import UID_BASE

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
HUMANEVAL = SHARED_DATA / "HumanEval.jsonl.gz"


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _ours(pid: int) -> bool:
    """Whether ``pid`` descends from this test process (other sessions may run sandboxes too)."""
    me = os.getpid()
    for _ in range(64):
        if pid in (0, 1):
            return False
        if pid == me:
            return True
        pid = _parent(pid)
    return False


def sandbox_processes() -> list[tuple[int, int]]:
    """(pid, uid) of every live process running as a sandbox uid of one of *our* workers (or
    descending from us), machine-wide."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        uid = int(line.split()[1])
                        if uid >= UID_BASE and (_ours(int(entry)) or _ours(uid - UID_BASE)):
                            found.append((int(entry), uid))
                        break
        except OSError:  # the process exited while we looked
            continue
    return found


def calls_task(expected: object, fn: str = "f", args: list | None = None) -> dict:
    return {"tests": {"kind": "calls", "fn": fn, "cases": [{"args": args or [], "expected": expected}]}}
