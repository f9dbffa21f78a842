"""Gather the wheels a GPU machine without internet lacks, for bench/gpu_acceptance.py, and check offline
that they resolve there.

Why: the lent GPU machines (see FACTS and the device tool's KINDS.md) have Python 3.12, torch 2.11,
transformers 5.17, accelerate 1.15, peft, triton, pyarrow, ... but not trl, datasets (+ dill,
multiprocess), liger-kernel, deepspeed (+ pydantic, hjson), gymnasium, RestrictedPython or
pyseccomp, and they cannot reach PyPI. Some packages they do have are of a
version nobody has read (typing-extensions, fsspec, tqdm, peft, pyarrow) while our pins need a
given range (pydantic 2.14 wants typing-extensions >= 4.16; datasets 5.2 wants pyarrow >= 24,
fsspec <= 2026.9.0, tqdm >= 4.66.3 and huggingface-hub >= 1.31, read there at 1.33.0; peft 0.21),
so their wheels travel too: pip takes one only
where the machine's copy does not satisfy the pin. This downloads the wheels (binary only, for
the target Python and manylinux x86_64) and builds deepspeed's here (an sdist on PyPI) with
``DS_BUILD_OPS=0``, its ops JIT-compiled on first use. The ``ifeval`` extra (nltk, langdetect) is
not gathered: no GPU run uses ifeval-v0.

pyarrow (~40 MiB) goes to its own folder, ``<dest>-pyarrow``, and only with ``--pyarrow``: the
device tool carries 64 MiB a call, working tree included, so carry it only when the machine's
pyarrow is older than 24 (``bench/gpu_setup.sh`` says so), in its own call of one warm hold.

    python bench/gather_wheels.py                       # -> bench/wheels (git-ignored), cp312
    python bench/gather_wheels.py --pyarrow             # + bench/wheels-pyarrow
    python bench/gather_wheels.py --check               # resolve offline against the GPU machine
    python bench/gather_wheels.py --requirements        # what bench/gpu_setup.sh installs

``--check`` runs pip's resolver with ``--no-index`` over the gathered folders and one more folder
of metadata-only wheels that stand for what the GPU machine already has (``READ``: versions seen
there; ``UNREAD``: versions assumed, or taken as too old where a carried wheel stands in). It is a
check of the metadata here, not of the machine: ``bench/gpu_setup.sh`` dry-runs the real install
there first. It prints what each requirement resolved to and on what assumption.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEST = Path(__file__).resolve().parent / "wheels"
LIMIT_BYTES = 64 * 2**20

# Pinned to the versions the project's test command resolves (FACTS: "a stack that resolves
# together"); the pins of datasets 5.2 and pydantic 2.14 set the floor of the ones that stand in.
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
    "pyseccomp==0.1.2",
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
    # on the machine at a version nobody has read: these stand in where it is too old
    "typing-extensions==4.16.0",
    "fsspec==2026.9.0",
    "tqdm==4.70.1",
    "peft==0.21.2",
    "setuptools==84.2.1",  # the build backend of `pip install --no-build-isolation -e .` (>= 68)
)  # huggingface-hub: 1.33.0 was read there, inside datasets 5.2's ">=1.31,<3"
BUILT = ("deepspeed==0.19.8",)  # an sdist only on PyPI: its wheel is built here
PYARROW = ("pyarrow==26.0.1",)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)

# What the GPU machine's image holds (the device tool's KINDS.md: the package list read 2026-11-17
# and one session's pip list). READ: versions seen there. UNREAD: there at a version nobody has
# read; --check takes the version given here (the current release, an assumption it prints),
# except for the ones a carried wheel stands in for and pyarrow (40 MiB: carry it only when
# needed), which it takes as too old. ``--machine NAME=VERSION`` gives a version read there.
READ: dict[str, str] = {
    "torch": "2.11.0",
    "transformers": "5.17.0",
    "accelerate": "1.15.0",
    "huggingface-hub": "1.33.0",
    "numpy": "2.5.2",
    "safetensors": "0.8.0",
    "tokenizers": "0.23.2",
    "triton": "3.6.0",
}
UNREAD: dict[str, str] = {
    "sympy": "1.14.0",
    "mpmath": "1.3.0",
    "packaging": "26.3",
    "pyyaml": "6.0.4",
    "pandas": "3.1.1",
    "psutil": "7.2.2",
    "jinja2": "3.1.6",
    "filelock": "4.2.12",
    "xxhash": "4.1.0",
    "cloudpickle": "3.1.3",
    "click": "8.5.1",
    "joblib": "1.6.0",
    "regex": "2026.11.19",
    "six": "1.17.0",
    "nvidia-ml-py": "13.615.71",
    "msgpack": "1.2.4",
    "einops": "0.8.2",
    "ninja": "1.13.2",
    "py-cpuinfo": "9.0.0",
    "matplotlib": "3.10.8",
    "setuptools": "80.9.0",
    "peft": "0",
    "pyarrow": "0",
    "typing-extensions": "0",
    "fsspec": "0",
    "tqdm": "0",
}
TOO_OLD = "0"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements() -> list[str]:
    """What the GPU acceptance needs installed there: the project's dependencies and its ``trl``,
    ``liger`` and ``deepspeed`` extras, less torch's pin (the machine's torch is the one used)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["trl"], *extras["liger"], *extras["deepspeed"]]
    return [r for r in wanted if not canonical(r).startswith(("rlvr-gym", "torch=", "torch>", "torch<"))]


def build_requirements() -> list[str]:
    """What ``pip install --no-build-isolation -e .`` needs installed there (pyproject's build-system)."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"])


def download_command(dest: Path, python_version: str, packages: tuple[str, ...] = WHEELS) -> list[str]:
    abi = "cp" + python_version.replace(".", "")
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    return [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--python-version", python_version, "--implementation", "cp", "--abi", abi, "--abi", "abi3",
        "--abi", "none", *platforms, "--dest", str(dest), *packages,
    ]  # fmt: skip


def build_wheel(spec: str, dest: Path) -> Path:
    """``spec``'s wheel, built here from its sdist (deepspeed: no op compiled, so pure Python)."""
    stem = canonical(spec.split("==")[0]).replace("-", "_")
    built = sorted(dest.glob(f"{stem}-*.whl"))
    if built:
        return built[-1]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", spec,
         "-w", str(dest)],
        check=True,
        env={**os.environ, "DS_BUILD_OPS": "0"},
    )  # fmt: skip
    return sorted(dest.glob(f"{stem}-*.whl"))[-1]


def tree_bytes() -> int:
    """Bytes of the working tree the device tool sends (tracked and untracked-not-ignored files)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    files = [ROOT / os.fsdecode(p) for p in listed if p]
    return sum(f.stat().st_size for f in files if f.is_file())


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.whl"))


def fits(folder: Path, tree: int) -> None:
    total = tree + folder_bytes(folder)
    if total > LIMIT_BYTES:
        raise SystemExit(
            f"a call carrying {folder} sends {total / 2**20:.1f} MiB (tree {tree / 2**20:.1f} + wheels "
            f"{folder_bytes(folder) / 2**20:.1f}), over the 64 MiB a device call carries"
        )


def gather(dest: Path, python_version: str, *, pyarrow: bool = False) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(download_command(dest, python_version), check=True)
    for spec in BUILT:
        build_wheel(spec, dest)
    tree = tree_bytes()
    fits(dest, tree)
    folders = [dest]
    if pyarrow:
        extra = pyarrow_folder(dest)
        extra.mkdir(parents=True, exist_ok=True)
        subprocess.run(download_command(extra, python_version, PYARROW), check=True)
        fits(extra, tree)
        folders.append(extra)
    return sorted(p for folder in folders for p in folder.glob("*.whl"))


def pyarrow_folder(dest: Path) -> Path:
    return dest.with_name(dest.name + "-pyarrow")


def stub_wheel(folder: Path, name: str, version: str) -> Path:
    """A metadata-only wheel standing for a package the GPU machine already has (for --check only)."""
    stem = f"{canonical(name).replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    info = f"{stem}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: gather_wheels\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
        archive.writestr(f"{info}/RECORD", "".join(f"{m},,\n" for m in [*files, f"{info}/RECORD"]))
    return path


def machine(carried: set[str], read: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Each package of the GPU machine: (the version --check takes, why)."""
    out = {name: (version, "machine, read") for name, version in READ.items()}
    for name, version in UNREAD.items():
        if name in carried or version == TOO_OLD:
            out[name] = (TOO_OLD, "machine, unread: taken as too old")
        else:
            out[name] = (version, "machine, unread: ASSUMED this version")
    out.update({canonical(n): (v, "machine, read (--machine)") for n, v in read.items()})
    return out


def check(folders: list[Path], python_version: str, read: dict[str, str] | None = None) -> tuple[bool, str]:
    """Resolve ``requirements()`` and ``build_requirements()`` with ``--no-index`` over ``folders``
    and the machine's stand-ins."""
    carried = {canonical(p.name.split("-")[0]) for folder in folders for p in folder.glob("*.whl")}
    packages = machine(carried, read or {})
    abi = "cp" + python_version.replace(".", "")
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    with tempfile.TemporaryDirectory() as scratch:
        stand_ins = Path(scratch) / "machine"
        stand_ins.mkdir()
        for name, (version, _) in packages.items():
            stub_wheel(stand_ins, name, version)
        report = Path(scratch) / "report.json"
        links = [arg for folder in [*folders, stand_ins] for arg in ("--find-links", str(folder))]
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-index", "--ignore-installed",
             "--isolated", *links, "--only-binary=:all:", "--python-version", python_version,
             "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none", *platforms,
             "--target", str(Path(scratch) / "target"), "--report", str(report), *requirements(),
             *build_requirements()],
            capture_output=True,
            text=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")}, "PIP_CONFIG_FILE": os.devnull},
        )  # fmt: skip
        if done.returncode != 0:
            return False, done.stderr.strip()
        lines = []
        for item in json.loads(report.read_text())["install"]:
            url = item["download_info"]["url"]
            meta = item["metadata"]
            name = canonical(meta["name"])
            source = packages[name][1] if "/machine/" in url else f"carried ({url.rsplit('/', 1)[-1]})"
            lines.append(f"{meta['name']:<24} {meta['version']:<12} {source}")
        return True, "\n".join(sorted(lines, key=str.lower))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    parser.add_argument("--pyarrow", action="store_true", help="also gather pyarrow into <dest>-pyarrow")
    parser.add_argument("--check", action="store_true", help="only resolve offline what is gathered")
    parser.add_argument("--requirements", action="store_true", help="print what the machine installs")
    parser.add_argument(
        "--build-requirements", action="store_true", help="print what the project's editable install needs"
    )
    parser.add_argument(
        "--machine",
        action="append",
        default=[],
        metavar="NAME=VERSION",
        help="a version read on the GPU machine (bench/gpu_setup.sh prints them), for --check",
    )
    args = parser.parse_args(argv)
    if args.requirements or args.build_requirements:
        print("\n".join(requirements() if args.requirements else build_requirements()))
        return 0
    if not args.check:
        gather(args.dest, args.python_version, pyarrow=args.pyarrow)
    folders = [f for f in (args.dest, pyarrow_folder(args.dest)) if f.is_dir()]
    tree = tree_bytes()
    for folder in folders:
        for wheel in sorted(folder.glob("*.whl")):
            print(f"{wheel.stat().st_size / 2**20:7.2f} MiB  {wheel.name}")
        size = folder_bytes(folder)
        print(
            f"{size / 2**20:7.2f} MiB  in {folder}; a call carrying it sends "
            f"{(tree + size) / 2**20:.1f} of 64 MiB with the working tree"
        )
    read = dict(item.split("=", 1) for item in args.machine)
    ok, said = check(folders, args.python_version, read)
    print(("resolves offline:\n" if ok else "does NOT resolve offline:\n") + said)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
