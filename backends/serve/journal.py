"""An append-only record of every verdict the server answers, on disk before the answer leaves.

With ``--verdict-log FILE`` each answered verdict is one JSON line — env, split, index, episode
(or the batch's item), and the verdict — written and ``fsync``-ed *before* the response is sent,
so a server killed at any moment (``kill -9``, a lost node) has every verdict a client received
in the file; at worst a line for a verdict the client never got. A torn last line (killed
mid-write) is skipped by :func:`read_journal`.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class Journal:
    """Appends lines to ``path`` durably; safe from many threads and tasks."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held open for the server's life
        self._lock = threading.Lock()

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        """Append ``records`` and wait until they are on disk."""
        text = "".join(json.dumps(record, default=repr) + "\n" for record in records)
        if not text:
            return
        with self._lock:
            self._file.write(text)
            self._file.flush()
            os.fsync(self._file.fileno())

    async def awrite(self, records: Iterable[dict[str, Any]]) -> None:
        """:meth:`write` off the event loop (``fsync`` blocks)."""
        await asyncio.to_thread(self.write, list(records))

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_journal(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The journal's records, a torn last line (a kill mid-write) left out."""
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


__all__ = ["Journal", "read_journal"]
