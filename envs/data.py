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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlvr_gym.error import NotAvailable

DATA_DIR_ENV = "RLVR_GYM_DATA_DIR"


class DataUnavailableError(NotAvailable):
    """The rows could not be loaded; the message says which sources were tried and how to fix it."""


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
    rows = []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataUnavailableError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise DataUnavailableError(f"{path}:{number}: expected a JSON object per line")
            rows.append(row)
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


def load_hub(dataset: str, config: str | None, split: str) -> list[dict[str, Any]]:
    """Rows of a hub dataset split, through ``datasets`` (imported lazily)."""
    try:
        import datasets
    except ImportError:
        raise DataUnavailableError(
            f"loading {dataset!r} from the Hugging Face hub needs `pip install datasets`; "
            f"or pass a local path, or set ${DATA_DIR_ENV} to a folder of JSONL files"
        ) from None
    try:
        table = datasets.load_dataset(dataset, config, split=split)
    except Exception as exc:  # network, auth, missing split: all mean "not available here"
        raise DataUnavailableError(
            f"could not load {dataset!r} split {split!r} from the hub ({type(exc).__name__}: {exc}); "
            f"pass a local path or set ${DATA_DIR_ENV} to a folder of JSONL files"
        ) from exc
    return [dict(row) for row in table]


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
