"""The ``fsdp-vllm`` backend (also ``fsdp``): FSDP2 training through accelerate, generation by
vLLM through TRL, or by transformers' ``generate`` when asked with ``generation="transformers"``.

Why: with several GPUs, generation dominates a GRPO step; vLLM generates many times faster than
``model.generate`` and FSDP2 shards weights, gradients and optimizer states across the training
GPUs. ``server`` mode starts ``trl vllm-serve`` on the GPUs given to it, waits for its health,
trains on the others, and tears the server down on exit or error; ``colocate`` mode runs vLLM
inside every training rank. ``generation="transformers"`` trains with FSDP2 on every visible GPU
and generates inside each rank with the sharded model — slower, but it needs no vLLM, so FSDP2
works on any multi-GPU box and on one GPU. It is an explicit choice: a missing vllm never
switches generation silently. CUDA is always needed: where it (or vllm, for vLLM generation) is
missing, ``available()`` names what is missing and ``train`` refuses — accelerate would otherwise
drop the FSDP plugin on CPU without a word and train with DDP, which is not what was asked for.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlvr_gym.backends import trl as trl_backend
from rlvr_gym.backends.config import RunConfig, about
from rlvr_gym.backends.engine.launch import LaunchSpec, is_worker, run_or_launch, worker_main
from rlvr_gym.backends.engine.vllm_server import VLLMServer, trl_vllm_serve_command
from rlvr_gym.backends.protocol import RunResult
from rlvr_gym.envs import Env
from rlvr_gym.error import InvalidArgumentError, NotAvailableError

NAME = "fsdp-vllm"
Mode = Literal["server", "colocate"]
Generation = Literal["vllm", "transformers"]
GENERATIONS = ("vllm", "transformers")


@dataclass(frozen=True)
class Options:
    """This backend's options (``train``'s keywords; ``--backend fsdp-vllm`` flags)."""

    mode: Mode = field(default="server", metadata=about("where vLLM generates", flag="--vllm-mode"))
    generation: Generation = field(default="vllm", metadata=about("vLLM, or transformers' generate"))
    vllm_gpus: int = field(default=1, metadata=about("GPUs given to the vLLM server (server mode)"))
    port: int = field(default=8000, metadata=about("the vLLM server's port", flag="--vllm-port"))
    launch: LaunchSpec | None = field(
        default=None, metadata=about("ranks (default: one per training GPU)", flag=None)
    )
    server_startup_timeout_s: float = field(
        default=900.0,
        metadata=about("how long the vLLM server may take to start", flag="--vllm-startup-timeout-s"),
    )


def _check_generation(generation: str) -> None:
    if generation not in GENERATIONS:
        raise InvalidArgumentError(f"generation must be one of {GENERATIONS}, got {generation!r}")


def missing(mode: Mode = "server", generation: Generation = "vllm") -> list[str]:
    """Everything this machine lacks for ``mode`` and ``generation``, each item naming the fix."""
    _check_generation(generation)
    problems = [
        f"package {name} (pip install 'rlvr-gym[trl]')"
        for name in trl_backend.REQUIRED
        if importlib.util.find_spec(name) is None
    ]
    if generation == "transformers":
        mode = "colocate"  # no server: every GPU trains and generates
    elif importlib.util.find_spec("vllm") is None:
        problems.append("package vllm (pip install 'rlvr-gym[vllm]', a CUDA machine)")
    if importlib.util.find_spec("torch") is not None:
        import torch

        if not torch.cuda.is_available():
            problems.append("CUDA (no GPU visible to torch; FSDP2 trains on GPUs only)")
        elif mode == "server" and torch.cuda.device_count() < 2:
            problems.append(
                f"a second GPU (server mode gives vLLM its own GPU; {torch.cuda.device_count()} visible, "
                "use mode='colocate' on one)"
            )
    return problems


def available(mode: Mode = "server", generation: Generation = "vllm", **_options: Any) -> tuple[bool, str]:
    """Whether FSDP2 (+ vLLM unless ``generation="transformers"``) can run here; if not, what is missing."""
    problems = missing(mode, generation)
    if problems:
        return False, "fsdp-vllm needs " + "; ".join(problems)
    if generation == "transformers":
        return True, "FSDP2 training + transformers generation on CUDA"
    return True, f"FSDP2 training + vLLM {mode} generation on CUDA"


def decoder_layer_classes(model: str | Path) -> list[str]:
    """The decoder-layer class names FSDP2 wraps one by one (the model class's ``_no_split_modules``)."""
    import transformers
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    config = AutoConfig.from_pretrained(str(model))
    name = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(config.model_type)
    classes = (
        list(getattr(getattr(transformers, name, None), "_no_split_modules", None) or []) if name else []
    )
    if not classes:
        raise InvalidArgumentError(
            f"no decoder-layer class known for model_type {config.model_type!r}; cannot plan FSDP wrapping"
        )
    return classes


def fsdp_overrides(
    model: str | Path,
    *,
    mode: Mode = "server",
    host: str = "127.0.0.1",
    port: int = 8000,
    gpu_memory_utilization: float = 0.3,
    activation_checkpointing: bool = True,
    generation: Generation = "vllm",
) -> dict[str, Any]:
    """The TRL/transformers arguments for FSDP2 (the fields of TRL's ``accelerate_configs/fsdp2.yaml``)
    and generation by vLLM in ``mode`` or by transformers.

    Activation checkpointing under FSDP is FSDP's own (``fsdp_config``); transformers refuses a
    run that also sets ``gradient_checkpointing``, so that is switched off here whatever the
    run config said — the run's ``gradient_checkpointing`` arrives as ``activation_checkpointing``.
    """
    if mode not in ("server", "colocate"):
        raise InvalidArgumentError(f"mode must be 'server' or 'colocate', got {mode!r}")
    _check_generation(generation)
    overrides: dict[str, Any] = {
        "fsdp": "full_shard auto_wrap",
        "fsdp_config": {
            "version": 2,
            "transformer_layer_cls_to_wrap": decoder_layer_classes(model),
            "reshard_after_forward": True,
            "state_dict_type": "FULL_STATE_DICT",
            "cpu_ram_efficient_loading": True,
            "activation_checkpointing": activation_checkpointing,
        },
        "gradient_checkpointing": False,
        "use_vllm": generation == "vllm",
    }
    if generation == "transformers":
        return overrides
    overrides["vllm_mode"] = mode
    if mode == "server":
        overrides.update(vllm_server_host=host, vllm_server_port=port)
    else:
        overrides.update(vllm_gpu_memory_utilization=gpu_memory_utilization)
    return overrides


def train(
    env: Env,
    config: RunConfig,
    *,
    model: str | Path,
    resume: bool = False,
    mode: Mode = "server",
    generation: Generation = "vllm",
    vllm_gpus: int = 1,
    port: int = 8000,
    launch: LaunchSpec | None = None,
    server_startup_timeout_s: float = 900.0,
    **trl_overrides: Any,
) -> RunResult:
    """Train ``env`` with FSDP2 on this machine's GPUs, generating with ``generation``; refuses where
    it cannot run. ``generation="transformers"`` trains on every visible GPU (``mode`` is unused)."""
    ok, why = available(mode, generation)
    if not ok:
        raise NotAvailableError(f"fsdp-vllm cannot run here: {why}")
    config = config.for_env(env.id)  # a run folder even when called without trainers.train
    import torch

    total = torch.cuda.device_count()
    overrides = {
        **fsdp_overrides(
            model,
            mode=mode,
            port=port,
            generation=generation,
            activation_checkpointing=config.gradient_checkpointing,
        ),
        **trl_overrides,
    }
    job = dict(env=env, config=config, model=model, resume=resume, overrides=overrides)
    if is_worker() or mode == "colocate" or generation == "transformers":
        # FSDP needs launched ranks even for one GPU: accelerate drops it in a plain process.
        spec = launch or LaunchSpec(num_processes=total)
        return run_or_launch(_train_here, __name__, spec, in_process=False, **job)
    if not 1 <= vllm_gpus < total:
        raise InvalidArgumentError(
            f"vllm_gpus must leave at least one of {total} GPUs for training, got {vllm_gpus}"
        )
    train_gpus, serve_gpus = list(range(total - vllm_gpus)), list(range(total - vllm_gpus, total))
    spec = launch or LaunchSpec(num_processes=len(train_gpus))
    command = trl_vllm_serve_command(str(model), port=port, data_parallel_size=len(serve_gpus))
    with VLLMServer(
        command,
        port=port,
        gpus=serve_gpus,
        startup_timeout_s=server_startup_timeout_s,
        log_path=Path(config.output_dir) / "vllm-serve.log",
    ) as server:
        try:
            return run_or_launch(
                _train_here,
                __name__,
                spec,
                in_process=False,
                launch_env={"CUDA_VISIBLE_DEVICES": ",".join(map(str, train_gpus))},
                **job,
            )
        except RuntimeError as exc:
            server.check()  # a dead server is the cause worth reporting
            raise exc


def _train_here(
    env: Env, config: RunConfig, *, model: str | Path, resume: bool, overrides: dict[str, Any]
) -> RunResult:
    import torch.distributed as dist

    try:
        return trl_backend.train(env, config, model=model, resume=resume, **overrides)
    finally:
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()


def main(argv: Sequence[str] | None = None) -> int:
    """The worker entry point a launcher runs in every rank."""
    return worker_main(_train_here, NAME, argv)


if __name__ == "__main__":
    raise SystemExit(main())
