"""Where env data comes from: an explicit path, the ``RLVR_GYM_DATA_DIR`` folder, or the hub.

Offline machines (and the tests) point ``RLVR_GYM_DATA_DIR`` at a folder of local copies, or pass
``data_path``; only when neither is given does an env reach for the Hugging Face hub, through
``datasets`` (an optional dependency, imported only then).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DATA_DIR_VAR = "RLVR_GYM_DATA_DIR"


def data_dir() -> Path | None:
    """The folder named by ``RLVR_GYM_DATA_DIR``, if set (it must exist)."""
    value = os.environ.get(DATA_DIR_VAR)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"{DATA_DIR_VAR}={value!r} is not a folder")
    return path


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a ``.jsonl`` or ``.jsonl.gz`` file, blank lines skipped."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_hub(name: str, split: str, config: str | None = None) -> Iterator[dict[str, Any]]:
    """Rows of a hub dataset split (needs ``datasets`` and network access)."""
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(
            f"loading {name!r} from the Hugging Face hub needs the 'datasets' package "
            f"(pip install 'rlvr-gym[trl]'); offline, pass data_path=... or set {DATA_DIR_VAR}"
        ) from exc
    return iter(datasets.load_dataset(name, config, split=split))
