"""Worker targets for tests of verifiers.math.budget (run inside the worker process)."""

from __future__ import annotations

import os
import time


def echo(value: object) -> object:
    return value


def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def hog(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024 * 1024))


def die() -> None:
    os._exit(3)


def big_power() -> int:
    """C-level big-integer work that a signal alarm could not interrupt."""
    return (9 ** (9**9)).bit_length()


def buggy() -> None:
    raise KeyError("a bug in the target")
