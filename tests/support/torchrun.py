"""Run a test worker script in two gloo ranks under torchrun and read back what each rank wrote."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_two_ranks(worker: Path, *args: str, out: Path) -> list[dict]:
    """``torchrun --nproc-per-node=2 worker *args out``; each rank writes ``out/rank{r}.json``."""
    return run_ranks(worker, *args, out=out, n=2)


def run_ranks(worker: Path, *args: str, out: Path, n: int) -> list[dict]:
    """``torchrun --nproc-per-node=n worker *args out``; each rank writes ``out/rank{r}.json``."""
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nproc-per-node={n}",
            f"--master-port={free_port()}",
            str(worker),
            *args,
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(n)]
