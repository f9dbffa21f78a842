"""What this machine offers a training run: GPUs and their memory, host RAM, bf16, vllm.

A plain value object so ``backends.auto`` and ``rlvr-gym plan`` can be asked about hardware
that is not this machine ("what would 4×H100 need?") as easily as about this one.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from rlvr_gym.error import InvalidArgumentError

GIB = 1024**3


@dataclass(frozen=True)
class Hardware:
    gpus: int = 0
    gpu_memory_bytes: int = 0  # per GPU
    cpu_memory_bytes: int = 0
    bf16: bool = False
    vllm: bool = False

    def __post_init__(self) -> None:
        if self.gpus < 0 or self.gpu_memory_bytes < 0 or self.cpu_memory_bytes < 0:
            raise InvalidArgumentError(f"hardware figures must be >= 0, got {self}")
        if self.gpus and not self.gpu_memory_bytes:
            raise InvalidArgumentError("a machine with GPUs needs gpu_memory_bytes > 0")

    def describe(self) -> str:
        gpus = f"{self.gpus} GPU × {self.gpu_memory_bytes / GIB:.0f} GiB" if self.gpus else "no GPU"
        extras = ", bf16" if self.bf16 else ""
        extras += ", vllm" if self.vllm else ", no vllm"
        return f"{gpus}, {self.cpu_memory_bytes / GIB:.0f} GiB RAM{extras}"


def cpu_memory_bytes() -> int:
    """Total host RAM (``/proc/meminfo``, else ``sysconf``)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def detect() -> Hardware:
    """This machine, as torch and the installed packages see it (torch absent: CPU only)."""
    gpus, memory, bf16 = 0, 0, False
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            gpus = torch.cuda.device_count()
            memory = min(torch.cuda.get_device_properties(i).total_memory for i in range(gpus))
            bf16 = torch.cuda.is_bf16_supported()
    return Hardware(
        gpus=gpus,
        gpu_memory_bytes=memory,
        cpu_memory_bytes=cpu_memory_bytes(),
        bf16=bf16,
        vllm=importlib.util.find_spec("vllm") is not None,
    )
