"""A worker target whose import is slow, like sympy's: shows whether the standby was warm."""

from __future__ import annotations

import time

time.sleep(1.0)


def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"
