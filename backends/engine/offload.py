"""Activation offload that moves only large activations to host memory, never parameters.

Why not ``torch.autograd.graph.save_on_cpu``: it copies *every* tensor autograd saves for
backward, parameters included — the (tied) LM-head weight once per log-prob tile, each decoder
weight once per layer call — so a step pays host copies of the model it already holds, and the
pinned host buffers for them can raise, not lower, the peak. These hooks keep in place any saved
tensor that is a parameter or a view of one (frozen LoRA bases too) and any tensor under
``min_bytes`` (a copy there costs more than it frees), and copy the rest to (pinned) host
memory — once per tensor, however often it is saved — bringing them back to their device in
backward. Gradients are unchanged: the same
values come back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

from rlvr_gym.error import InvalidArgumentError

DEFAULT_MIN_BYTES = 1 << 20


def is_parameter(tensor: torch.Tensor) -> bool:
    """A parameter, or a view of one (``weight.t()`` is what a linear layer saves)."""
    base = tensor._base if tensor._base is not None else tensor
    return isinstance(base, torch.nn.Parameter)


@dataclass
class OffloadStats:
    """What the hooks did with the tensors saved while they were active."""

    parameters: int = 0
    parameter_bytes: int = 0
    small: int = 0
    small_bytes: int = 0
    offloaded: int = 0
    offloaded_bytes: int = 0


class ActivationOffload(torch.autograd.graph.saved_tensors_hooks):
    """``with ActivationOffload():`` — large non-parameter tensors saved for backward live on the host.

    ``pin_memory`` (default: when CUDA is present) pins the host copies so the copies back in
    backward are asynchronous. ``stats`` counts what was kept (parameters, small tensors) and what
    was offloaded.
    """

    def __init__(self, min_bytes: int = DEFAULT_MIN_BYTES, pin_memory: bool | None = None) -> None:
        if min_bytes < 0:
            raise InvalidArgumentError(f"min_bytes must be >= 0, got {min_bytes}")
        pin = torch.cuda.is_available() if pin_memory is None else pin_memory
        self.stats = OffloadStats()
        stats = self.stats
        # Keyed by the tensor object's identity; an entry goes when its tensor does.
        copies = WeakIdKeyDictionary()

        def pack(tensor: torch.Tensor) -> Any:
            size = tensor.numel() * tensor.element_size()
            if is_parameter(tensor):
                stats.parameters += 1
                stats.parameter_bytes += size
                return tensor
            if size < min_bytes or tensor.is_sparse:
                stats.small += 1
                stats.small_bytes += size
                return tensor
            seen = copies.get(tensor)
            if seen is not None and seen[0] == tensor._version:
                return seen[1]  # saved again unchanged (one weight, many tiles): one host copy
            host = torch.empty(tensor.size(), dtype=tensor.dtype, layout=tensor.layout, pin_memory=pin)
            host.copy_(tensor, non_blocking=pin)
            stats.offloaded += 1
            stats.offloaded_bytes += size
            packed = (tensor.device, host)
            copies[tensor] = (tensor._version, packed)
            return packed

        def unpack(packed: Any) -> torch.Tensor:
            if isinstance(packed, torch.Tensor):
                return packed
            device, host = packed
            return host.to(device, non_blocking=pin)

        super().__init__(pack, unpack)

    def __enter__(self) -> ActivationOffload:
        super().__enter__()
        return self
