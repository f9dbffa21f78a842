"""Static analysis follows every import: pyright resolves ``rlvr_gym.*`` to the top-level folders.

The import root reaches ``envs/``, ``verifiers/``, ``backends/`` and ``trainers/`` through links in
``rlvr_gym/``, not through an import hook, so pyright, mypy and editors see what Python imports.
With the old ``package-dir`` mapping this check found 189 unresolved ``rlvr_gym.*`` imports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ["envs", "verifiers", "backends", "trainers", "tests", "examples", "bench"]
ROOT_MODULES = ["rlvr_gym/__init__.py", "rlvr_gym/error.py"]
OPTIONAL = {
    "vllm",
    "lm_eval",
    "reasoning_gym",
    "openenv",
    "skyrl_gym",
    "verifiers",
}  # extras the test command may not install: GPU only; bench-only [bench-ifeval]; [reasoning-gym]; [openenv]; [skyrl];
# [verifiers] (PrimeIntellect's `verifiers.v1`; our own are checked as `rlvr_gym.verifiers`)


def pyright() -> str:
    found = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if found is None:
        pytest.fail("pyright is not installed: it comes with the [dev] extra (pyright[nodejs])")
    return found


@pytest.mark.slow
def test_pyright_resolves_every_rlvr_gym_import(tmp_path: Path) -> None:
    # Import resolution only: type checking off and no inference from library code keep it fast;
    # the config lives outside the tree (pyright takes include paths relative to it).
    here = lambda p: os.path.relpath(ROOT / p, tmp_path)  # noqa: E731
    config = {
        "include": [here(p) for p in CHECKED + ROOT_MODULES],
        "exclude": ["**/__pycache__"],
        "executionEnvironments": [{"root": here(".")}],
        "pythonVersion": "3.11",
        "typeCheckingMode": "off",
        "useLibraryCodeForTypes": False,
        "reportMissingImports": "error",
    }
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config))
    run = subprocess.run(
        [pyright(), "--outputjson", "--pythonpath", sys.executable, "-p", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(run.stdout[run.stdout.index("{") :])
    assert report["summary"]["filesAnalyzed"] >= 100, report["summary"]
    missing = [d for d in report["generalDiagnostics"] if d.get("rule") == "reportMissingImports"]
    ours = [
        f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']}"
        for d in missing
        if "rlvr_gym" in d["message"]
    ]
    assert ours == []
    others = {d["message"].split('"')[1].split(".")[0] for d in missing} - OPTIONAL
    assert others == set(), f"unresolved third-party imports: {sorted(others)}"
