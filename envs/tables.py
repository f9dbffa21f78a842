"""A user's dataset as rows: a JSONL, JSON, CSV or Parquet file, or a hub id (``org/name``).

Every row remembers where it came from (``file:line`` for JSONL and CSV, ``file[i]`` for a JSON
list, ``file row i`` for Parquet, the hub split and row otherwise), so an env that checks its rows
up front (:func:`rlvr_gym.envs.data.parse_rows`) names the bad one instead of failing mid-training.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from rlvr_gym.envs.data import (
    BadDataRowError,
    DataRow,
    DataUnavailableError,
    load_hub,
    located_row,
    read_jsonl,
)
from rlvr_gym.error import InvalidArgumentError

FORMATS = (".jsonl", ".jsonl.gz", ".json", ".csv", ".parquet")
"""File endings :func:`read_table` reads."""


def _suffix(path: Path) -> str:
    name = path.name.lower()
    return next((s for s in sorted(FORMATS, key=len, reverse=True) if name.endswith(s)), path.suffix.lower())


def read_json(path: Path) -> list[DataRow]:
    """A JSON list of objects (or ``{"rows"|"data": [...]}``), each row named ``file[i]``."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise BadDataRowError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise BadDataRowError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if isinstance(value, dict):
        value = next((value[k] for k in ("rows", "data") if isinstance(value.get(k), list)), value)
    if not isinstance(value, list):
        raise BadDataRowError(f"{path}: expected a JSON list of objects, got {type(value).__name__}")
    rows = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadDataRowError(f"{path}[{index}]: expected a JSON object, got {type(item).__name__}")
        rows.append(located_row(item, f"{path}[{index}]"))
    return rows


def read_csv(path: Path) -> list[DataRow]:
    """A CSV file with a header line; every value is text (``file:line`` names a row)."""
    rows = []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            start = 2
            for record in reader:
                if None in record:  # more fields than the header names
                    raise BadDataRowError(f"{path}:{start}: more fields than the header's {reader.fieldnames}")
                rows.append(located_row(dict(record), f"{path}:{start}"))
                start = reader.line_num + 1
    except UnicodeDecodeError as exc:
        raise BadDataRowError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except csv.Error as exc:
        raise BadDataRowError(f"{path}: not CSV ({exc})") from None
    return rows


def read_parquet(path: Path) -> list[DataRow]:
    """A Parquet file through ``pyarrow`` (a dependency of ``datasets``)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataUnavailableError(f"reading {path} needs pyarrow: pip install pyarrow") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow's own errors: a file that is not Parquet
        raise BadDataRowError(f"{path}: not a Parquet file ({exc})") from None
    return [located_row(record, f"{path} row {i}") for i, record in enumerate(table.to_pylist())]


def read_table(
    data: str | os.PathLike[str], *, split: str = "train", config: str | None = None
) -> list[DataRow]:
    """The rows of ``data``: a local file (by its ending) or, when no such file exists and it
    looks like ``org/name``, that hub dataset's ``split`` (through ``datasets``)."""
    if not isinstance(data, str | os.PathLike):
        raise InvalidArgumentError(f"data must be a file path or a hub id ('org/name'), got {data!r}")
    path = Path(data).expanduser()
    if path.is_file():
        suffix = _suffix(path)
        if suffix in (".jsonl", ".jsonl.gz"):
            return read_jsonl(path)
        if suffix == ".json":
            return read_json(path)
        if suffix == ".csv":
            return read_csv(path)
        if suffix == ".parquet":
            return read_parquet(path)
        raise InvalidArgumentError(f"{path}: unknown file type; data files end in {', '.join(FORMATS)}")
    text = str(data)
    if path.exists():
        raise InvalidArgumentError(f"data={text!r} is a folder; name a file ({', '.join(FORMATS)})")
    if text.count("/") == 1 and not text.startswith((".", "/", "~")) and _suffix(path) not in FORMATS:
        return load_hub(text, config, split)
    raise DataUnavailableError(f"no data file {text!r} (and it is not a hub id 'org/name')")


__all__ = ["FORMATS", "read_csv", "read_json", "read_parquet", "read_table"]
