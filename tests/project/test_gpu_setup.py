"""bench/gpu_setup.sh, sourced as a GPU command does, on this (CPU) machine: it puts the
interpreter's bin/ on the caller's PATH (DeepSpeed's JIT build runs ``ninja --version``), stays
idempotent, names what is missing (an uncarried wheel folder, compilers, CUDA) in plain words
instead of failing, and never exits the caller's shell. What it installs from carried wheels is bench/gather_wheels.py's check; the GPU itself is
not emulated here."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "bench" / "gpu_setup.sh"


@pytest.mark.slow
def test_sourcing_puts_the_interpreters_bin_on_path_and_names_what_is_missing(tmp_path):
    scripts = Path(sysconfig.get_path("scripts"))
    if not (scripts / "ninja").is_file():
        pytest.skip("no ninja script beside this interpreter (the deepspeed extra installs one)")
    outside = [
        p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p).resolve() != scripts.resolve()
    ]
    absent = tmp_path / "wheels"  # a folder the command was meant to carry and did not
    shell = (  # the first time with no compilers to be found, as on a bare image
        f'. "{SETUP}" "{absent}"; echo "status=$?"; echo "ninja=$(command -v ninja)"; unset CC CXX; '
        f'. "{SETUP}" "{absent}" >/dev/null; echo "path=$PATH"'
    )
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    done = subprocess.run(
        ["bash", "-c", shell],
        env={
            **env,
            "PATH": os.pathsep.join(outside),
            "PYTHON": sys.executable,
            "CC": str(tmp_path / "no-cc"),
            "CXX": "no-such-c++",
        },
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]  # the caller's shell went on after each source
    lines = dict(
        line.split("=", 1) for line in out.splitlines() if line.startswith(("status=", "ninja=", "path="))
    )
    assert Path(lines["ninja"]).parent.resolve() == scripts.resolve(), out
    assert [Path(p).resolve() for p in lines["path"].split(os.pathsep)].count(scripts.resolve()) == 1
    assert f"MISSING: wheel folder {absent} (not carried?)" in out
    assert "MISSING: a C compiler: gcc, clang or $CC (Triton builds its kernel launcher with it)" in out
    assert "MISSING: a C++ compiler: no-such-c++ ($CXX; DeepSpeed's cpu_adam JIT build" in out
    assert "Traceback" not in out
    import torch

    if not torch.cuda.is_available():
        assert "MISSING: cuda: torch sees no CUDA device" in out
        assert lines["status"] == "1"
    assert "gpu_setup: ready" in out or "missing (above)" in out
