"""Launch a backend's worker module in N processes, on one machine or several.

Why: a multi-process backend runs the same ``train`` in every rank, so it re-executes itself
under a launcher. ``torchrun`` is the default (it needs nothing beyond torch and picks gloo on
CPU); ``accelerate launch`` is the alternative for clusters configured through accelerate.
The run's inputs travel in a pickle file, so the very env object the caller built is trained.
"""

from __future__ import annotations

import argparse
import copyreg
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from rlvr_gym.backends.protocol import RunResult, run_result
from rlvr_gym.error import InvalidArgumentError, RunFailedError

Launcher = Literal["torchrun", "accelerate"]


@dataclass(frozen=True)
class LaunchSpec:
    """Processes per machine and the rendezvous of a multi-machine run (``accelerate`` names)."""

    num_processes: int = field(default=1, metadata={"help": "processes per machine"})
    num_machines: int = field(default=1, metadata={"help": "machines in the run"})
    machine_rank: int = field(default=0, metadata={"help": "this machine's rank"})
    main_process_ip: str = field(default="127.0.0.1", metadata={"help": "rank-0 machine address"})
    main_process_port: int = field(default=29500, metadata={"help": "rank-0 machine port"})
    launcher: Launcher = field(default="torchrun", metadata={"help": "what starts the ranks"})

    def __post_init__(self) -> None:
        if self.num_processes < 1 or self.num_machines < 1:
            raise InvalidArgumentError(f"num_processes and num_machines must be >= 1, got {self}")
        if not 0 <= self.machine_rank < self.num_machines:
            raise InvalidArgumentError(
                f"machine_rank must lie in [0, {self.num_machines}), got {self.machine_rank}"
            )
        if self.launcher not in ("torchrun", "accelerate"):
            raise InvalidArgumentError(f"launcher must be 'torchrun' or 'accelerate', got {self.launcher!r}")

    @property
    def world_size(self) -> int:
        return self.num_processes * self.num_machines

    @property
    def in_process(self) -> bool:
        """One process on one machine runs in the caller's process: no launcher, no pickling."""
        return self.world_size == 1

    def command(self, module: str, args: Sequence[str] = ()) -> list[str]:
        """The launcher command line that runs ``python -m module *args`` in every rank."""
        if self.launcher == "torchrun":
            head = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                f"--nproc-per-node={self.num_processes}",
                f"--nnodes={self.num_machines}",
                f"--node-rank={self.machine_rank}",
                f"--master-addr={self.main_process_ip}",
                f"--master-port={self.main_process_port}",
                "-m",
                module,
            ]
        else:
            head = [
                sys.executable,
                "-m",
                "accelerate.commands.launch",
                f"--num_processes={self.world_size}",  # accelerate counts all machines' processes
                f"--num_machines={self.num_machines}",
                f"--machine_rank={self.machine_rank}",
                f"--main_process_ip={self.main_process_ip}",
                f"--main_process_port={self.main_process_port}",
                "-m",
                module,
            ]
        return head + list(args)


def is_worker() -> bool:
    """Whether this process was started by a launcher (it sets ``LOCAL_RANK``)."""
    return "LOCAL_RANK" in os.environ


def _mappingproxy(mapping: dict) -> MappingProxyType:
    return MappingProxyType(mapping)


def _reduce_mappingproxy(proxy: MappingProxyType) -> tuple[Any, tuple[dict]]:
    return _mappingproxy, (dict(proxy),)


# Read-only views (a Rubric's weights) do not pickle by default; they rebuild from a dict copy.
_DISPATCH = {**copyreg.dispatch_table, MappingProxyType: _reduce_mappingproxy}


def write_job(
    directory: str | Path,
    *,
    env: Any,
    config: Any,
    model: str | Path,
    resume: bool,
    overrides: Mapping[str, Any],
) -> Path:
    """Pickle a job for the workers (the fields :func:`worker_main` reads); unpicklable envs fail clearly."""
    job = {"env": env, "config": config, "model": str(model), "resume": resume, "overrides": dict(overrides)}
    Path(directory).mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix="job-", suffix=".pkl", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            pickler = pickle.Pickler(out)
            pickler.dispatch_table = _DISPATCH
            pickler.dump(job)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        Path(name).unlink(missing_ok=True)
        raise InvalidArgumentError(
            f"a multi-process run sends the env to its workers by pickle, and this one does not pickle ({exc}); "
            "define the env class at module level (not in a function) or pass a registered env id"
        ) from exc
    return Path(name)


def read_job(path: str | Path) -> dict[str, Any]:
    with open(path, "rb") as handle:
        return pickle.load(handle)


def worker_main(train_here: Callable[..., Any], backend: str, argv: Sequence[str] | None = None) -> int:
    """The entry point a launcher runs in every rank: read the job file, train in this process."""
    parser = argparse.ArgumentParser(description=f"{backend} worker (started by the launcher)")
    parser.add_argument("--job", required=True)
    args = parser.parse_args(argv)
    job = read_job(args.job)
    train_here(
        job["env"], job["config"], model=job["model"], resume=job["resume"], overrides=job["overrides"]
    )
    return 0


def caller_import_dirs(pythonpath: str | None) -> list[str]:
    """``pythonpath``'s entries, then this process's ``sys.path`` folders (``''`` as the absolute
    working directory), without duplicates: what a worker needs to unpickle the caller's classes."""
    entries = [*(pythonpath or "").split(os.pathsep), *(p or os.getcwd() for p in sys.path)]
    seen: dict[str, None] = {}
    for entry in entries:
        if entry and os.path.isdir(entry):
            seen.setdefault(os.path.abspath(entry), None)
    return list(seen)


def run(
    command: Sequence[str], *, env: Mapping[str, str] | None = None, timeout_s: float | None = None
) -> None:
    """Run the launcher; its output streams through; a non-zero exit raises with the command."""
    environment = {**os.environ, **(env or {})}
    # rlvr_gym comes from the installed distribution; the job may also pickle the caller's own env
    # classes by module name, so the workers see the directories the caller imports from.
    environment["PYTHONPATH"] = os.pathsep.join(caller_import_dirs(environment.get("PYTHONPATH")))
    completed = subprocess.run(list(command), env=environment, timeout=timeout_s, check=False)
    if completed.returncode != 0:
        raise RunFailedError(f"launched run failed with exit code {completed.returncode}: {' '.join(command)}")


def run_or_launch(
    train_here: Callable[..., RunResult],
    module: str,
    launch: LaunchSpec,
    *,
    in_process: bool,
    env: Any,
    config: Any,
    model: str | Path,
    resume: bool,
    overrides: Mapping[str, Any],
    launch_env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> RunResult:
    """Train in this process (``in_process``, or this already is a launched rank), else launch
    ``module``'s :func:`worker_main` in every rank of ``launch`` and read back what they left.

    The one "run here or launch ranks" step both multi-process backends share: the job file
    carries the caller's env object to the ranks and is removed whatever the outcome.
    """
    if in_process or is_worker():
        return train_here(env, config, model=model, resume=resume, overrides=overrides)
    output_dir = Path(config.output_dir)
    job = write_job(
        output_dir / "launch", env=env, config=config, model=model, resume=resume, overrides=overrides
    )
    try:
        run(launch.command(module, ["--job", str(job)]), env=launch_env, timeout_s=timeout_s)
    finally:
        job.unlink(missing_ok=True)
    return run_result(output_dir)
