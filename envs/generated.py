"""``GeneratedTasks``: an indexable sequence of tasks made on demand from their index.

Procedural envs (arith, countdown, ifeval, the reasoning-gym bridge) store no rows: task ``i`` is
a pure function of ``i`` and the env's settings. This base gives them the ``Sequence`` contract
once — slices, negative indices, and one clear error past the end — so each says only how task
``i`` is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from rlvr_gym.error import OutOfRangeError


class GeneratedTasks(Sequence[dict[str, Any]]):
    """``size`` tasks; subclasses implement :meth:`task` (index already checked, in range)."""

    size: int

    def task(self, index: int) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement task(index)")

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise OutOfRangeError(f"task index {index} out of range ({self.size} tasks)")
        return self.task(index)
