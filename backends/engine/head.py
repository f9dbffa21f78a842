"""The LM head's weight and bias as plain tensors, for losses that read them without the head's forward.

Why: the memory path (``memory.py``) and Liger's loss (``liger.py``) run the decoder and then
use ``lm_head.weight`` directly, never calling ``lm_head``. Under FSDP2 a parameter whose
module has not run forward is a sharded ``DTensor``; handed to a kernel beside the decoder's
plain hidden states it fails with "mixed torch.Tensor and DTensor". TRL 1.16 guards its own
fused head the same way (``trl/trainer/utils.py``, ``_fused_forward``): ``full_tensor()`` once,
before the token chunks, so all chunks share one all-gather, and its backward reduce-scatters
the head's gradient back to the shards.
"""

from __future__ import annotations

from typing import Any


def plain(tensor: Any) -> Any:
    """``tensor`` itself, or the whole tensor gathered from its shards when it is a ``DTensor``."""
    if tensor is None:
        return None
    from torch.distributed.tensor import DTensor

    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor


def head_weight_and_bias(model: Any) -> tuple[Any, Any]:
    """``model``'s output-embedding weight and bias (``None`` without one), gathered if sharded."""
    head = model.get_output_embeddings()
    return plain(head.weight), plain(getattr(head, "bias", None))
