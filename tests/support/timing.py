"""Wall-clock bounds that still mean something on a slow or busy CI machine.

A bound in a test says "this is cheap" (milliseconds) or "this does not wait for a timeout"
(seconds); the failures it guards against take minutes or forever. CI runners can be several times
slower than the machine a bound was written on, so every bound goes through :func:`bound`, which
multiplies it by a factor measured once per test process: a fixed pure-Python workload timed here
against its time on the idle 2-core machine the bounds were written on, never below 1.
``RLVR_GYM_TEST_SLACK`` sets the factor instead (for a machine whose load changes mid-run).
"""

from __future__ import annotations

import functools
import os
import time

# Seconds the workload below took on the idle 2-core machine the bounds were written on (best of 3).
REFERENCE_SECONDS = 0.050


def _workload() -> float:
    started = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i * i % 7
    return time.perf_counter() - started


@functools.lru_cache(maxsize=1)
def slack() -> float:
    """How many times slower than the reference machine this one is now (at least 1)."""
    if os.environ.get("RLVR_GYM_TEST_SLACK"):
        return max(1.0, float(os.environ["RLVR_GYM_TEST_SLACK"]))
    measured = min(_workload() for _ in range(3))
    return max(1.0, measured / REFERENCE_SECONDS)


def bound(seconds: float) -> float:
    """``seconds`` scaled to this machine's speed: the limit a timing assert compares against."""
    return seconds * slack()
