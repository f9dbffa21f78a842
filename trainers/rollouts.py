"""Rollout logs: one JSON line per scored completion, appended as soon as it is scored.

The log is the eval's checkpoint: a rollout is keyed by ``(split, index, sample)``, so an
interrupted eval reads back what it finished and scores only the rest. A line cut short by a
kill is dropped (and the file trimmed to its last whole line) instead of failing the resume.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlvr_gym.error import InvalidArgument

ROLLOUTS_FILE = "rollouts.jsonl"

RolloutKey = tuple[str, int, int]


def rollout_key(row: dict[str, Any]) -> RolloutKey:
    return (str(row["split"]), int(row["index"]), int(row["sample"]))


def read_rollouts(path: str | Path) -> list[dict[str, Any]]:
    """Every whole row of a rollout log (a torn last line is skipped); ``[]`` when absent."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def find_rollout_logs(run_dir: str | Path) -> Iterator[Path]:
    """Rollout logs anywhere under ``run_dir`` (evals write them in their own folders)."""
    yield from sorted(Path(run_dir).rglob(ROLLOUTS_FILE))


class RolloutLog:
    """Append-only rollout log that remembers which rollouts are already done."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._trim_torn_tail()
        self.rows: dict[RolloutKey, dict[str, Any]] = {rollout_key(r): r for r in read_rollouts(self.path)}
        self._out = self.path.open("a", encoding="utf-8")

    def _trim_torn_tail(self) -> None:
        """Cut a partial last line (the process was killed mid-write) so appends start clean."""
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            self.path.write_bytes(data[: data.rfind(b"\n") + 1])

    def __contains__(self, key: RolloutKey) -> bool:
        return key in self.rows

    def append(self, row: dict[str, Any]) -> None:
        """Write one rollout and flush it to disk before the next one is scored."""
        key = rollout_key(row)
        if key in self.rows:
            raise InvalidArgument(f"rollout {key} is already in {self.path}")
        self._out.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._out.flush()
        os.fsync(self._out.fileno())
        self.rows[key] = row

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> RolloutLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
