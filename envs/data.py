"""Where an env's rows come from: a local JSONL file, a folder, ``$RLVR_GYM_DATA_DIR``, or the hub.

Resolution order for a split: an explicit ``path`` (a ``.jsonl`` file, or a folder holding
``<prefix>_<split>.jsonl``); else the folder named by the environment variable
``RLVR_GYM_DATA_DIR`` (same file names); else the Hugging Face hub through ``datasets``, which
is imported only then and is not a core dependency.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from rlvr_gym.error import (  # noqa: F401 - defined with the whole tree
    BadDataRowError,
    DataUnavailableError,
    Error,
    InvalidArgumentError,
    NotAvailableError,
)

T = TypeVar("T")
HUB_PROBE_S = 3.0
"""Seconds to wait for a TCP connection to the hub before calling it unreachable (instead of
the client's ~55 s of retries)."""

DATA_DIR_ENV = "RLVR_GYM_DATA_DIR"


class DataRow(dict):
    """A row that remembers where it was read (``file:line``, or the hub split and row), so a
    problem found while turning it into a task names its place."""

    origin: str = ""


def located_row(data: dict[str, Any], origin: str) -> DataRow:
    """``data`` as a row that names where it was read (``origin``)."""
    row = DataRow(data)
    row.origin = origin
    return row


def parse_rows(
    rows: Sequence[dict[str, Any]], parse: Callable[[dict[str, Any]], T], *, required: Sequence[str] = ()
) -> list[T]:
    """``parse`` each row into a task; a missing ``required`` key or any error ``parse`` raises on
    a row becomes :class:`BadDataRowError` naming the file and line (never a bare ``KeyError``)."""
    tasks = []
    for number, row in enumerate(rows, 1):
        where = getattr(row, "origin", "") or f"row {number}"
        missing = [key for key in required if key not in row]
        if missing:
            raise BadDataRowError(
                f"{where}: missing key{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                f"(the row has {', '.join(map(repr, list(row)[:12])) or 'no keys'})"
            )
        try:
            tasks.append(parse(row))
        except KeyError as exc:
            raise BadDataRowError(
                f"{where}: missing key {exc.args[0]!r} (the row has {', '.join(map(repr, list(row)[:12]))})"
            ) from None
        except (TypeError, ValueError, IndexError, AttributeError, Error) as exc:
            raise BadDataRowError(f"{where}: {exc}") from None
    return tasks


def data_dir() -> Path | None:
    """The folder named by ``$RLVR_GYM_DATA_DIR``, or ``None`` when it is unset."""
    folder = os.environ.get(DATA_DIR_ENV)
    if not folder:
        return None
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise DataUnavailableError(f"${DATA_DIR_ENV}={folder!r} is not a folder")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``.jsonl`` or ``.jsonl.gz`` file (blank lines skipped), with the line number in any error."""
    rows: list[dict[str, Any]] = []
    opener = gzip.open if path.suffix == ".gz" else open
    number = 0
    try:
        with opener(path, "rb") as handle:  # bytes, decoded line by line: an error names its line
            for number, raw in enumerate(handle, 1):  # noqa: B007 (the number names a bad line below)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise BadDataRowError(f"{path}:{number}: not UTF-8 text ({exc.reason})") from None
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BadDataRowError(f"{path}:{number}: not JSON ({exc.msg})") from None
                if not isinstance(row, dict):
                    raise BadDataRowError(f"{path}:{number}: expected a JSON object per line")
                rows.append(located_row(row, f"{path}:{number}"))
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # a cut or corrupt .gz
        raise BadDataRowError(
            f"{path}:{number + 1}: the gzip file is truncated or corrupt ({exc}); download it again"
        ) from None
    return rows


def local_file(path: str | os.PathLike[str] | None, prefix: str, split: str) -> Path | None:
    """The JSONL file for ``split`` from ``path`` or ``$RLVR_GYM_DATA_DIR``; ``None`` means use the hub."""
    name = f"{prefix}_{split}.jsonl"
    if path is not None:
        candidate = Path(path)
        if candidate.is_dir():
            candidate = candidate / name
        if not candidate.is_file():
            raise DataUnavailableError(f"no data file {candidate} (path={str(path)!r}, split {split!r})")
        return candidate
    folder = data_dir()
    if folder is not None:
        candidate = folder / name
        if not candidate.is_file():
            raise DataUnavailableError(f"${DATA_DIR_ENV}={str(folder)!r} has no {name}")
        return candidate
    return None


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` is set: the hub clients read only their local cache (and fail fast)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_unreachable() -> str | None:
    """Why the Hugging Face hub endpoint (``HF_ENDPOINT`` or huggingface.co) cannot be reached:
    no TCP connection within :data:`HUB_PROBE_S`; ``None`` when it answers.

    Without it the hub clients retry an unreachable host for about a minute before failing;
    asking first makes a machine without a route fail in seconds.
    """
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(endpoint)
    host = parts.hostname or "huggingface.co"
    port = parts.port or (80 if parts.scheme == "http" else 443)
    import concurrent.futures

    def connect() -> None:  # name resolution has no timeout of its own: bound it from outside
        with socket.create_connection((host, port), timeout=HUB_PROBE_S):
            pass

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        pool.submit(connect).result(timeout=HUB_PROBE_S + 0.5)
    except (OSError, concurrent.futures.TimeoutError) as exc:
        return f"no route to {host}:{port} ({exc or 'timed out'})"
    finally:
        pool.shutdown(wait=False)
    return None


def load_hub(dataset: str, config: str | None, split: str) -> list[dict[str, Any]]:
    """Rows of a hub dataset split, through ``datasets`` (imported lazily)."""
    try:
        import datasets
    except ImportError:
        raise DataUnavailableError(
            f"loading {dataset!r} from the Hugging Face hub needs `pip install datasets`; "
            f"or pass a local path, or set ${DATA_DIR_ENV} to a folder of JSONL files"
        ) from None
    unreachable = None if hub_offline() else hub_unreachable()
    if unreachable is not None:
        raise DataUnavailableError(
            f"cannot load {dataset!r} from the Hugging Face hub: {unreachable}; pass a local path, "
            f"set ${DATA_DIR_ENV} to a folder of JSONL files, or HF_HUB_OFFLINE=1 to use a cached copy"
        )
    try:
        table = datasets.load_dataset(dataset, config, split=split)
    except Exception as exc:  # network, auth, missing split: all mean "not available here"
        raise DataUnavailableError(
            f"could not load {dataset!r} split {split!r} from the hub ({type(exc).__name__}: {exc}); "
            f"pass a local path or set ${DATA_DIR_ENV} to a folder of JSONL files"
        ) from exc
    return [located_row(dict(row), f"{dataset} split {split!r} row {i}") for i, row in enumerate(table)]


def load_rows(
    path: str | os.PathLike[str] | None,
    *,
    prefix: str,
    split: str,
    hub: tuple[str, str | None],
    hub_splits: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Rows for ``split`` from the first source that applies (see module docs)."""
    file = local_file(path, prefix, split)
    if file is not None:
        return read_jsonl(file)
    dataset, config = hub
    return load_hub(dataset, config, (hub_splits or {}).get(split, split))
