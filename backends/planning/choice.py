"""The backend a run should use, from the hardware and the memory plan, and the table that says why.

Rules, in order: no GPU → ``trl`` on CPU; several GPUs with vllm installed and the sharded run
fitting → ``fsdp-vllm`` (one GPU serves vLLM, the rest train); the whole run fitting one GPU →
``trl``; the GPU part of ZeRO-2 with CPU offload fitting → ``deepspeed-zero2``; else an error
that names the way out (LoRA, more GPUs). "Fits" keeps 10% of a device free for the CUDA
context and fragmentation.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlvr_gym.backends.planning.hardware import Hardware
from rlvr_gym.backends.planning.memory_plan import GIB, MemoryPlan, ModelShape, Workload, gib, plan
from rlvr_gym.error import (
    NoBackendFitsError,  # noqa: F401 - defined with the whole tree
    )

HEADROOM = 0.9
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class Choice:
    backend: str
    reason: str
    plan: MemoryPlan | None
    hardware: Hardware


def workload_for(config) -> Workload:
    """The batch shapes of a :class:`rlvr_gym.backends.config.RunConfig` run."""
    lora = config.lora
    targets = ALL_LINEAR
    if lora is not None and not isinstance(lora.target_modules, str):
        targets = tuple(lora.target_modules)
    return Workload(
        micro_batch=config.completions_per_step,
        prompt_length=config.max_prompt_length,
        completion_length=config.max_completion_length,
        generation_batch=config.completions_per_step,
        lora_r=lora.r if lora is not None else None,
        lora_targets=targets,
        reference_model=config.beta > 0,
    )


def choose(shape: ModelShape | None, hardware: Hardware, workload: Workload | None = None) -> Choice:
    """Pick a backend; ``shape=None`` (the tiny offline model) fits anywhere."""
    workload = workload or Workload()
    if hardware.gpus == 0:
        memory = plan(shape, workload, num_gpus=0, dtype_bytes=4) if shape else None
        return Choice("trl", "no GPU: TRL's GRPOTrainer on CPU (fp32)", memory, hardware)
    if shape is None:
        return Choice("trl", "the tiny offline model fits one GPU", None, hardware)
    budget = hardware.gpu_memory_bytes * HEADROOM
    dtype = 2 if hardware.bf16 else 4
    if hardware.gpus >= 2 and hardware.vllm:
        memory = plan(shape, workload, num_gpus=hardware.gpus - 1, dtype_bytes=dtype)
        fsdp, server = memory.backends["fsdp-vllm"], memory.backends["vllm-server"]
        if fsdp.gpu_total <= budget and server.gpu_total <= budget:
            return Choice(
                "fsdp-vllm",
                f"{hardware.gpus} GPUs with vllm: FSDP2 over {hardware.gpus - 1} needs {gib(fsdp.gpu_total)} GiB each, "
                f"the vLLM server {gib(server.gpu_total)} GiB",
                memory,
                hardware,
            )
    memory = plan(shape, workload, num_gpus=1, dtype_bytes=dtype)
    trl, zero2 = memory.backends["trl"], memory.backends["deepspeed-zero2"]
    if trl.gpu_total <= budget:
        return Choice("trl", f"the whole run fits one GPU ({gib(trl.gpu_total)} GiB)", memory, hardware)
    if zero2.gpu_total <= budget and zero2.cpu_total <= hardware.cpu_memory_bytes * HEADROOM:
        return Choice(
            "deepspeed-zero2",
            f"a full run needs {gib(trl.gpu_total)} GiB > {gib(int(budget))} GiB of one GPU; with the optimizer "
            f"offloaded to CPU it needs {gib(zero2.gpu_total)} GiB GPU + {gib(zero2.cpu_total)} GiB RAM",
            memory,
            hardware,
        )
    raise NoBackendFitsError(
        f"no backend fits: one GPU has {gib(hardware.gpu_memory_bytes)} GiB, a full run needs {gib(trl.gpu_total)} GiB "
        f"and ZeRO-2 offload {gib(zero2.gpu_total)} GiB GPU + {gib(zero2.cpu_total)} GiB RAM; train a LoRA "
        "adapter (--lora-r 16), shorten completions, or add GPUs"
    )


ROWS = (
    "weights",
    "reference_model",
    "gradients",
    "gradients_fp32",
    "optimizer",
    "logits",
    "activations",
    "kv_cache",
)


def render(choice: Choice) -> str:
    """One table: a row per memory term, a column per backend (GPU per device / CPU RAM), the pick."""
    lines = [f"hardware: {choice.hardware.describe()}"]
    memory = choice.plan
    if memory is not None:
        w = memory.workload
        lines.append(
            f"model: {memory.params / 1e9:.3f}B params, {memory.trainable / 1e6:.1f}M trainable; "
            f"micro-batch {w.micro_batch} × {w.sequence_length} tokens ({w.completion_length} completion), "
            f"generation batch {w.generation_batch}"
        )
        lines.append(
            f"activations without checkpointing: {gib(memory.terms['activations'])} GiB, "
            f"with: {gib(memory.terms['activations_checkpointed'])} GiB (plans below use checkpointing)"
        )
        columns = [(name, "gpu") for name in memory.backends] + [("deepspeed-zero2", "cpu")]
        header = ["GiB"] + [f"{name} {where}" for name, where in columns]
        table = [header]
        for row in ROWS:
            cells = [getattr(memory.backends[name], where).get(row) for name, where in columns]
            if any(cells):
                table.append([row] + [gib(c) if c else "-" for c in cells])
        table.append(
            ["total"] + [gib(sum(getattr(memory.backends[n], where).values())) for n, where in columns]
        )
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        for r in table:
            lines.append("  ".join(cell.rjust(width) for cell, width in zip(r, widths, strict=True)))
        if choice.hardware.gpus:
            lines.append(f"budget per GPU: {choice.hardware.gpu_memory_bytes * HEADROOM / GIB:.2f} GiB (90%)")
    lines.append(f"choice: {choice.backend} — {choice.reason}")
    return "\n".join(lines)


__all__ = ["GIB", "Choice", "NoBackendFitsError", "choose", "render", "workload_for"]
