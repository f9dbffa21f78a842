"""The ``deepspeed-zero2`` backend: TRL's ``GRPOTrainer`` under DeepSpeed ZeRO-2, optimizer on CPU.

Why: a full fine-tune needs ~16 bytes per parameter, 12 of them optimizer state; ZeRO-2 with the
optimizer offloaded (DeepSpeedCPUAdam, pinned memory on a GPU host) keeps those 12 in CPU RAM
and partitions gradients across ranks, so a 1.5B model trains on one 24 GB card. This module is
the ``trl`` backend plus a DeepSpeed config passed through ``trl_overrides``; it adds a launcher
for N processes (``torchrun`` or ``accelerate launch``, across machines too) and runs in-process
for one. DeepSpeed's ``cpu_adam`` op is JIT-compiled once into ``TORCH_EXTENSIONS_DIR``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_gym.backends import trl as trl_backend
from rlvr_gym.backends.config import LoraSettings, RunConfig, about
from rlvr_gym.backends.console import announce
from rlvr_gym.backends.engine.launch import LaunchSpec, is_worker, run_or_launch, worker_main
from rlvr_gym.backends.protocol import RunResult
from rlvr_gym.envs import Env
from rlvr_gym.error import InvalidArgumentError, NotAvailableError, RunFailedError

NAME = "deepspeed-zero2"
REQUIRED = (*trl_backend.REQUIRED, "deepspeed")
EVIDENCE = "zero2-rank{rank}.json"

# The recipe of the GRPO tutorial this backend grew from (Qwen 1.5B class, one 24 GB GPU):
# ``config.replace(**RECIPE)`` and ``micro_batch_size=MICRO_BATCH``.
RECIPE: dict[str, Any] = {
    "lora": LoraSettings(r=16, alpha=32, target_modules=("q_proj", "k_proj", "v_proj", "o_proj")),
    "num_generations": 4,
    "gradient_accumulation_steps": 8,
    "learning_rate": 5e-5,
}
MICRO_BATCH = 1
MAX_GRAD_NORM = 1.0


@dataclass(frozen=True)
class Options:
    """This backend's options (``train``'s keywords; ``--backend deepspeed-zero2`` flags)."""

    launch: LaunchSpec = field(default_factory=LaunchSpec, metadata=about("processes and rendezvous"))
    micro_batch_size: int | None = field(
        default=None, metadata=about("completions per forward pass (default: the whole step's)")
    )
    offload: bool = field(default=True, metadata=about("keep the optimizer states in CPU memory"))
    timeout_s: float | None = field(
        default=None, metadata=about("stop a launched run after this many seconds", flag="--launch-timeout-s")
    )


def available(**_options: Any) -> tuple[bool, str]:
    """Whether DeepSpeed can run here: the trl stack, deepspeed, and a C++ compiler for its ops."""
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        return False, f"missing packages {missing}: pip install 'rlvr-gym[deepspeed]'"
    if not (shutil.which("c++") or shutil.which("g++")):
        return False, "no C++ compiler (c++/g++) on PATH: DeepSpeed JIT-compiles its cpu_adam op"
    if importlib.util.find_spec("ninja") is None and not shutil.which("ninja"):
        return False, "ninja is missing: torch builds DeepSpeed's ops with it (pip install ninja)"
    return True, "DeepSpeed ZeRO-2, optimizer offloaded to CPU, " + (
        "on CUDA" if trl_backend.cuda_available() else "on CPU (gloo)"
    )


def zero2_config(*, offload: bool = True, pin_memory: bool | None = None) -> dict[str, Any]:
    """The DeepSpeed config; ``"auto"`` values are filled by transformers from the TRL arguments
    (batch sizes, accumulation, clipping, lr, bf16), so the two can never disagree."""
    if pin_memory is None:
        pin_memory = trl_backend.cuda_available()  # pinned host memory only helps (and only exists) with CUDA
    zero: dict[str, Any] = {
        "stage": 2,
        "allgather_partitions": True,
        "reduce_scatter": True,
        "overlap_comm": False,
        "contiguous_gradients": True,
    }
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": pin_memory}
    return {
        "zero_optimization": zero,
        "bf16": {"enabled": "auto"},
        "fp16": {"enabled": "auto"},
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
        "train_batch_size": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "zero_allow_untested_optimizer": True,
        "optimizer": {
            "type": "AdamW",
            "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"},
        },
    }


def training_overrides(
    config: RunConfig, *, micro_batch_size: int | None = None, offload: bool = True
) -> dict[str, Any]:
    """The TRL/transformers arguments this backend adds to the ``trl`` backend's (the run's own
    choices, such as ``gradient_checkpointing``, are the ``trl`` backend's to translate)."""
    micro = micro_batch_size or config.completions_per_step
    if micro < 1:
        raise InvalidArgumentError(f"micro_batch_size must be >= 1, got {micro}")
    return {
        "deepspeed": zero2_config(offload=offload),
        "per_device_train_batch_size": micro,
        "max_grad_norm": MAX_GRAD_NORM,
        "save_only_model": False,
    }


def extensions_dir() -> Path:
    """Where the JIT-compiled ops are cached: ``TORCH_EXTENSIONS_DIR`` or ``~/.cache/rlvr-gym``."""
    default = Path.home() / ".cache" / "rlvr-gym" / "torch_extensions"
    return Path(os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(default)))


def cpu_adam_built(ops: Path) -> bool:
    """Whether an earlier run left a compiled ``cpu_adam`` library in the extensions folder."""
    return ops.is_dir() and any(ops.glob("**/cpu_adam*.so"))


def train(
    env: Env,
    config: RunConfig,
    *,
    model: str | Path,
    resume: bool = False,
    launch: LaunchSpec | None = None,
    micro_batch_size: int | None = None,
    offload: bool = True,
    timeout_s: float | None = None,
    **trl_overrides: Any,
) -> RunResult:
    """Train ``env`` under ZeRO-2: in this process for one rank, else under ``launch``'s launcher.

    Every rank writes ``zero2-rank{N}.json`` (optimizer class, where its states live, their
    bytes) to ``config.output_dir`` — the evidence that the offload happened.
    """
    ok, why = available()
    if not ok:
        raise NotAvailableError(f"deepspeed-zero2 backend unavailable: {why}")
    config = config.for_env(env.id)  # a run folder even when called without trainers.train
    launch = launch or LaunchSpec()
    overrides = {
        **training_overrides(config, micro_batch_size=micro_batch_size, offload=offload),
        **trl_overrides,
    }
    ops = extensions_dir()
    if offload and not is_worker() and not cpu_adam_built(ops):
        announce(
            f"first DeepSpeed run here: compiling its cpu_adam op once into {ops} "
            "(about 2-5 minutes on a CPU; later runs reuse it)"
        )
    return run_or_launch(
        _train_here,
        __name__,
        launch,
        in_process=launch.in_process,
        env=env,
        config=config,
        model=model,
        resume=resume,
        overrides=overrides,
        timeout_s=timeout_s,
    )


def _train_here(
    env: Env, config: RunConfig, *, model: str | Path, resume: bool, overrides: dict[str, Any]
) -> RunResult:
    try:
        with _single_rank_environment():
            return trl_backend.train(
                # trl's train layers Liger and the memory path on top (trainer_class_for).
                env,
                config,
                model=model,
                resume=resume,
                trainer_class=evidence_trainer(),
                **overrides,
            )
    finally:
        _release_distributed()


@contextlib.contextmanager
def _single_rank_environment() -> Iterator[None]:
    """Run one rank in this process and leave ``os.environ`` exactly as it was.

    Without a launcher, DeepSpeed looks for MPI to learn its rank: tell it rank 0 of 1 (on a free
    port). transformers also sets ``ACCELERATE_USE_DEEPSPEED=true`` in the environment, which
    would turn every later run of this process, and every process it starts, into a DeepSpeed
    run; the whole environment is restored afterwards.
    """
    if is_worker():
        yield
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    saved = dict(os.environ)
    os.environ.update(
        {
            "RANK": "0",
            "LOCAL_RANK": "0",
            "WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def evidence_trainer(base: Any = None) -> Any:
    """A ``GRPOTrainer`` (or ``base``) subclass that records where ZeRO's optimizer state lives."""
    from trl import GRPOTrainer

    class ZeRO2Trainer(base or GRPOTrainer):
        def train(self, *args, **kwargs):
            output = super().train(*args, **kwargs)
            record = optimizer_evidence(self.model_wrapped)
            path = Path(self.args.output_dir) / EVIDENCE.format(rank=self.args.process_index)
            path.write_text(json.dumps(record, indent=2) + "\n")
            return output

    return ZeRO2Trainer


def optimizer_evidence(engine: Any) -> dict[str, Any]:
    """Where a DeepSpeed engine's ZeRO optimizer keeps its states, fp32 master weights, and their bytes."""
    zero = getattr(engine, "optimizer", None)
    inner = getattr(zero, "optimizer", None)
    if zero is None or inner is None:
        raise RunFailedError(f"not a DeepSpeed ZeRO engine: {type(engine).__name__}")
    states = [
        t for state in inner.state.values() for t in state.values() if hasattr(t, "device") and t.dim() > 0
    ]
    masters = list(getattr(zero, "single_partition_of_fp32_groups", []))
    return {
        "zero_optimizer": type(zero).__name__,
        "zero_stage": int(engine.zero_optimization_stage()),
        "cpu_offload": bool(getattr(zero, "cpu_offload", False)),
        "optimizer": type(inner).__name__,
        "state_devices": sorted({str(t.device) for t in states}),
        "state_bytes": sum(t.numel() * t.element_size() for t in states),
        "master_devices": sorted({str(t.device) for t in masters}),
        "master_bytes": sum(t.numel() * t.element_size() for t in masters),
        "world_size": int(engine.world_size),
    }


def _release_distributed() -> None:
    """Leave the process as we found it: a 2-rank run aborts at exit without destroying its
    process group, and an in-process run must not leave DeepSpeed state to the next one."""
    import deepspeed.comm as ds_dist
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        # DeepSpeed's own teardown also drops the groups it cached; a second run would reuse them.
        if ds_dist.is_initialized():
            ds_dist.destroy_process_group()
        else:
            dist.destroy_process_group()
    try:
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config

        unset_hf_deepspeed_config()
    except ImportError:
        pass
    from accelerate.state import AcceleratorState, PartialState

    AcceleratorState._reset_state(reset_partial_state=True)
    PartialState._reset_state()


def main(argv: Sequence[str] | None = None) -> int:
    """The worker entry point a launcher runs in every rank."""
    return worker_main(_train_here, NAME, argv)


if __name__ == "__main__":
    raise SystemExit(main())
