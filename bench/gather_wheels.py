"""Gather the wheels a GPU machine without internet lacks, for bench/gpu_acceptance.py, into one folder.

Why: the lent GPU machines (see FACTS) have Python 3.12, torch, transformers, accelerate, peft,
triton, pyarrow, xxhash, pandas — but not trl, datasets' small deps, liger-kernel, deepspeed
(nor its pydantic and hjson), gymnasium or RestrictedPython, and they cannot reach PyPI. This
downloads those wheels (binary only, for the target Python and manylinux x86_64) and builds
deepspeed's wheel here (its PyPI release is an sdist; ``DS_BUILD_OPS=0`` builds no op ahead of
time, the ops are JIT-compiled on first use). The folder must stay under 64 MiB (what the device
tool carries); the script fails if it does not.

    python bench/gather_wheels.py                       # -> bench/wheels (git-ignored), cp312
    python bench/gather_wheels.py --python-version 3.11 --dest /tmp/w  # wheels this machine can import

On the GPU machine: ``pip install --no-index --find-links bench/wheels trl datasets liger-kernel
deepspeed gymnasium RestrictedPython`` (pip takes from the folder only what is missing there).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

DEFAULT_DEST = Path(__file__).resolve().parent / "wheels"
LIMIT_BYTES = 64 * 2**20

# Pinned to the versions the project's test command resolves (FACTS: "a stack that resolves together").
WHEELS = (
    "trl==1.16.0",
    "datasets==5.2.0",
    "dill==0.4.1",
    "multiprocess==0.70.19",
    "liger-kernel==0.8.5",
    "gymnasium==1.4.0",
    "cloudpickle==3.1.2",
    "farama-notifications==0.0.6",
    "RestrictedPython==9.0",
    # deepspeed's own requirements that the GPU machine lacks
    "pydantic==2.14.3",
    "pydantic-core==2.50.4",
    "annotated-types==0.8.0",
    "typing-inspection==0.4.5",
    "hjson==3.1.0",
    "msgpack==1.2.4",
    "py-cpuinfo==9.0.0",
    "einops==0.8.2",
    "ninja==1.13.2",
)
DEEPSPEED = "deepspeed==0.19.8"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")


def download_command(dest: Path, python_version: str, packages: tuple[str, ...] = WHEELS) -> list[str]:
    abi = "cp" + python_version.replace(".", "")
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    return [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--python-version", python_version, "--implementation", "cp", "--abi", abi, "--abi", "abi3",
        "--abi", "none", *platforms, "--dest", str(dest), *packages,
    ]  # fmt: skip


def build_deepspeed(dest: Path) -> Path:
    """deepspeed's wheel, built here from its sdist with no op compiled (pure Python, any 3.x)."""
    built = sorted(dest.glob("deepspeed-*.whl"))
    if built:
        return built[-1]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            DEEPSPEED,
            "-w",
            str(dest),
        ],
        check=True,
        env={**os.environ, "DS_BUILD_OPS": "0"},
    )
    return sorted(dest.glob("deepspeed-*.whl"))[-1]


def gather(dest: Path, python_version: str) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(download_command(dest, python_version), check=True)
    build_deepspeed(dest)
    wheels = sorted(dest.glob("*.whl"))
    total = sum(p.stat().st_size for p in wheels)
    if total > LIMIT_BYTES:
        raise SystemExit(
            f"{dest} holds {total / 2**20:.1f} MiB of wheels, over the 64 MiB a device call carries"
        )
    return wheels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    args = parser.parse_args(argv)
    wheels = gather(args.dest, args.python_version)
    for wheel in wheels:
        print(f"{wheel.stat().st_size / 2**20:7.2f} MiB  {wheel.name}")
    print(f"{sum(w.stat().st_size for w in wheels) / 2**20:7.2f} MiB  in {len(wheels)} wheels, {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
