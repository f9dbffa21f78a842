"""The budgeted worker: killed on timeout, bounded in memory, replaced by a warm standby."""

from __future__ import annotations

import select
import time
from pathlib import Path

import pytest

from rlvr_gym.verifiers.math.budget import Worker
from tests.support.timing import bound

TARGETS = "tests.support.budget_targets"


@pytest.fixture(scope="module", autouse=True)
def _targets_importable():
    """The workers import rlvr_gym from the install; these test targets live in the repository."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[3]))
        yield


@pytest.fixture(scope="module")
def echo() -> Worker:
    worker = Worker(f"{TARGETS}:echo", memory_mb=256)
    worker.start()
    yield worker
    worker.close()


def test_round_trip_is_json(echo: Worker) -> None:
    outcome = echo.call({"a": [1, "x"]}, timeout=2)
    assert outcome.status == "ok" and outcome.value == {"a": [1, "x"]}


def test_timeout_kills_c_level_work_within_budget() -> None:
    worker = Worker(f"{TARGETS}:big_power", memory_mb=512)
    worker.start()
    try:
        started = time.monotonic()
        outcome = worker.call(timeout=0.5)
        assert outcome.status == "timeout" and time.monotonic() - started < bound(1.0)
        assert worker.restarts == 1
    finally:
        worker.close()


def test_memory_limit_and_recovery() -> None:
    worker = Worker(f"{TARGETS}:hog", memory_mb=128)
    worker.start()
    try:
        assert worker.call(16, timeout=5).status == "ok"
        assert worker.call(2048, timeout=5).status == "memory"
        assert worker.call(16, timeout=5).status == "ok"
    finally:
        worker.close()


def test_crash_is_reported_and_the_standby_takes_over() -> None:
    worker = Worker(f"{TARGETS}:die", memory_mb=128)
    worker.start()
    try:
        assert worker.call(timeout=5).status == "crashed"
        started = time.monotonic()
        assert worker.call(timeout=5).status == "crashed"
        assert time.monotonic() - started < bound(1.0)  # the standby was already warm
    finally:
        worker.close()


def test_after_a_kill_the_warm_standby_answers_at_once() -> None:
    """The import takes 1 s (as sympy's does); a fresh process after the kill would take that long."""
    worker = Worker("tests.support.budget_slow_import:sleep", memory_mb=128)
    worker.start()
    try:
        time.sleep(1.5)  # the standby, started with the worker, finishes its import
        assert worker.call(5, timeout=0.3).status == "timeout"
        started = time.monotonic()
        assert worker.call(0, timeout=2).value == "slept"
        assert time.monotonic() - started < bound(0.5)
    finally:
        worker.close()


def test_a_cold_call_waits_for_start_up_outside_its_budget() -> None:
    """The import takes 1 s; the budget is 0.3 s. Start-up is the worker's, not the computation's:
    charged to the budget, a right answer read ``timeout`` whenever the import outran it."""
    worker = Worker("tests.support.budget_slow_import:sleep", memory_mb=128)
    try:
        outcome = worker.call(0, timeout=0.3)
        assert (outcome.status, outcome.value) == ("ok", "slept")
        assert outcome.seconds < bound(0.3)  # the budget's clock started once the worker was ready
    finally:
        worker.close()


@pytest.mark.parametrize("bad", [0, -1, float("inf"), True, "1"])
def test_timeout_validation(echo: Worker, bad: object) -> None:
    with pytest.raises(ValueError):
        echo.call(1, timeout=bad)  # type: ignore[arg-type]


def test_memory_validation() -> None:
    with pytest.raises(ValueError):
        Worker(f"{TARGETS}:echo", memory_mb=1)


def test_a_bug_in_the_target_is_reported_and_the_worker_keeps_serving() -> None:
    worker = Worker(f"{TARGETS}:buggy", memory_mb=128)
    worker.start()
    try:
        first = worker.call(timeout=5)
        assert first.status == "error" and "KeyError" in first.value
        assert worker.call(timeout=5).status == "error" and worker.restarts == 0
    finally:
        worker.close()


def test_a_standby_started_long_ago_takes_over_without_a_false_start_failure() -> None:
    """The standby's ready line waits in its pipe; promoting it minutes later must read it, not
    call the worker failed (a training run's first timeout after a minute used to crash here)."""
    worker = Worker(f"{TARGETS}:echo", memory_mb=256)
    try:
        worker.start()
        standby = worker._standby
        assert standby is not None
        # its ready line arrives in the pipe, unread
        assert select.select([standby.popen.stdout.fileno()], [], [], 60)[0]
        worker._standby.started -= 600  # ten minutes old
        worker._retire()
        assert worker.call("hi", timeout=5).status == "ok"
    finally:
        worker.close()
