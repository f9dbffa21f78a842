"""bench/gather_wheels.py produces a folder that resolves offline against the GPU machine's
description (``--check``: pip's resolver, ``--no-index``), says so when it does not, installs
offline (``--no-index --no-deps``) and from which trl, liger_kernel and deepspeed import. Needs
PyPI (it downloads), hence slow.

The GPU machine runs Python 3.12; this machine runs 3.11, where cp312 builds (pydantic-core,
msgpack) and multiprocess's py312 wheel cannot be imported. The test gathers the same pinned set
for this interpreter's version instead: every pure-Python wheel (trl, liger-kernel, deepspeed,
datasets, ...) is the very file a 3.12 gather fetches, and the compiled ones are their cp311 twins.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gather_wheels.py"


@pytest.mark.slow
def test_gathered_wheels_install_offline_and_import(tmp_path):
    pytest.importorskip("torch", reason="deepspeed's wheel is built against the installed torch")
    dest, target = tmp_path / "wheels", tmp_path / "target"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    # pyarrow read at 24.0.0 there: the core folder alone must resolve (pyarrow's own folder is --pyarrow)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dest", str(dest), "--python-version", version]
        + ["--machine", "pyarrow=24.0.0"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "resolves offline:" in done.stdout
    wheels = sorted(dest.glob("*.whl"))
    names = {w.name.split("-")[0].lower().replace("_", "-") for w in wheels}
    assert {"trl", "liger-kernel", "deepspeed", "datasets", "pydantic", "pydantic-core", "hjson"} <= names
    # what a GPU run needs beyond the big four: the sandbox's seccomp, newer pins, the build backend
    assert {"pyseccomp", "typing-extensions", "fsspec", "peft", "setuptools"} <= names
    assert sum(w.stat().st_size for w in wheels) < 64 * 2**20
    # pyarrow unread there (taken as too old) and not carried: the check says so and fails
    unread = subprocess.run(
        [sys.executable, str(SCRIPT), "--dest", str(dest), "--python-version", version, "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert unread.returncode == 1 and "does NOT resolve" in unread.stdout
    assert "No matching distribution found for pyarrow" in unread.stdout
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--target",
            str(target),
        ]
        + [str(w) for w in wheels],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    probe = (
        "import sys, trl, liger_kernel, deepspeed, pydantic, datasets\n"
        "from liger_kernel.chunked_loss import LigerFusedLinearGRPOLoss\n"
        "print('\\n'.join(m.__file__ for m in (trl, liger_kernel, deepspeed, pydantic, datasets)))\n"
    )
    imported = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(target), "DS_ACCELERATOR": "cpu"},
        cwd=tmp_path,
    )
    assert imported.returncode == 0, imported.stderr[-3000:]
    files = imported.stdout.split()
    assert len(files) == 5 and all(f.startswith(str(target)) for f in files), files
