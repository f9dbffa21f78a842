"""Helpers shared by the code-sandbox tests: the data folder, host checks, completions."""

from __future__ import annotations

import os
from pathlib import Path

from rlvr_gym.envs.code_env import fenced  # noqa: F401 - re-exported for the tests
from rlvr_gym.verifiers.code.sandbox import UID_BASE

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HUMANEVAL = SHARED_DATA / "HumanEval.jsonl.gz"


def sandbox_processes() -> list[tuple[int, int]]:
    """(pid, uid) of every live process running as a sandbox uid, machine-wide."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        uid = int(line.split()[1])
                        if uid >= UID_BASE:
                            found.append((int(entry), uid))
                        break
        except OSError:  # the process exited while we looked
            continue
    return found


def calls_task(expected: object, fn: str = "f", args: list | None = None) -> dict:
    return {"tests": {"kind": "calls", "fn": fn, "cases": [{"args": args or [], "expected": expected}]}}
