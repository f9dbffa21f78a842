"""Liger's chunked GRPO loss inside TRL's ``GRPOTrainer``.

TRL 1.16 dropped ``use_liger_loss``, and its ``use_liger_kernel`` patches the model with
Triton kernels that cannot run on a CPU. This module wires ``LigerFusedLinearGRPOLoss`` in
directly: the loss is computed from the last hidden states and the LM head's weight in chunks,
so the full ``batch × length × vocab`` logits tensor is never materialised. The chunked loss is
plain torch and runs on CPU (eager) and GPU (``torch.compile``d); no Triton model kernels are used.

Not covered (refused with a clear message): vision inputs, tool masks, vLLM importance
sampling correction — the plain TRL loss handles those.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from rlvr_gym.backends.engine.forward import run_as_forward
from rlvr_gym.backends.engine.head import head_weight_and_bias
from rlvr_gym.backends.engine.memory import completion_hidden_states
from rlvr_gym.error import InvalidArgumentError, NotAvailableError

UNSUPPORTED_INPUTS = ("pixel_values", "tool_mask", "importance_sampling_ratio")


def available() -> tuple[bool, str]:
    if importlib.util.find_spec("liger_kernel") is None:
        return False, "liger-kernel is not installed: pip install 'rlvr-gym[liger]'"
    return True, "Liger chunked GRPO loss"


def liger_trainer_class(base: type | None = None) -> type:
    """``base`` (default TRL's ``GRPOTrainer``) with Liger's chunked fused-linear GRPO loss as its loss."""
    ok, why = available()
    if not ok:
        raise NotAvailableError(f"liger_loss=True but {why}")
    import torch
    from liger_kernel.chunked_loss import LigerFusedLinearGRPOLoss
    from trl import GRPOTrainer

    class LigerGRPOTrainer(base or GRPOTrainer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            a = self.args
            self.liger_grpo_loss = LigerFusedLinearGRPOLoss(
                beta=a.beta,
                compiled=torch.cuda.is_available(),
                use_ref_model=a.beta != 0.0,
                epsilon_low=a.epsilon,
                epsilon_high=a.epsilon_high if a.epsilon_high is not None else a.epsilon,
                loss_type=a.loss_type,
                max_completion_length=a.max_completion_length,
                importance_sampling_level=a.importance_sampling_level,
                temperature=a.temperature,
            )

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if return_outputs:
                raise InvalidArgumentError("GRPOTrainer does not return outputs from compute_loss")
            present = [key for key in UNSUPPORTED_INPUTS if inputs.get(key) is not None]
            if present:
                raise NotImplementedError(
                    f"liger_loss does not support inputs {present}; set liger_loss=False"
                )
            loss, metrics = fused_grpo_loss(
                self.accelerator.unwrap_model(model), self.liger_grpo_loss, inputs
            )
            mode = "train" if self.model.training else "eval"
            if self.beta != 0.0:
                self._metrics[mode]["kl"].append(self.accelerator.gather(metrics[0]).mean().item())
            self._metrics[mode]["clip_ratio/region_mean"].append(
                self.accelerator.gather(metrics[-1]).mean().item()
            )
            return loss

    return LigerGRPOTrainer


def fused_grpo_loss(model: Any, loss_module: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
    """``loss_module`` (a ``LigerFusedLinearGRPOLoss``) on a GRPO batch: the decoder's hidden
    states and the LM head's weight (gathered if FSDP2 left it sharded, ``head.py``), run as
    ``model``'s forward so a sharding wrapper's hooks fire (``forward.py``). ``(loss, metrics)``."""
    import torch

    completion_ids = inputs["completion_ids"]
    input_ids = torch.cat([inputs["prompt_ids"], completion_ids], dim=1)
    attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)

    def loss(ids: Any, mask: Any) -> tuple[Any, Any]:
        hidden = completion_hidden_states(model, ids, mask, completion_ids.size(1))
        weight, bias = head_weight_and_bias(model)
        return loss_module(
            _input=hidden,
            lin_weight=weight,
            selected_token_ids=completion_ids,
            attention_mask=inputs["completion_mask"],
            advantages=inputs["advantages"],
            bias=bias,
            old_per_token_logps=inputs.get("old_per_token_logps"),
            ref_per_token_logps=inputs.get("ref_per_token_logps"),
        )

    return run_as_forward(model, loss, input_ids, attention_mask)
