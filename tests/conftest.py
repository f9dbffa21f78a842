"""Shared test set-up: offline data for envs that would otherwise read the Hugging Face hub."""

from __future__ import annotations

import os
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# Envs with real data sets read RLVR_GYM_DATA_DIR before the hub; CI has no hub access.
if SHARED_DATA.is_dir():
    os.environ.setdefault("RLVR_GYM_DATA_DIR", str(SHARED_DATA))

# DeepSpeed JIT-compiles its cpu_adam op (~100 s) on first use; one cache folder inside the
# repo's ignored area makes that happen at most once per checkout, not once per test or process.
os.environ.setdefault(
    "TORCH_EXTENSIONS_DIR", str(Path(__file__).resolve().parents[1] / ".cache" / "torch_extensions")
)
