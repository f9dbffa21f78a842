"""Run under torchrun (2 ranks, gloo): on an FSDP2-sharded tiny Qwen2 model, take each of the two
paths that run the decoder and read the LM head's weight directly (``logps``: the memory path's
``model_completion_logps``; ``liger``: Liger's loss through ``fused_grpo_loss``, when installed)
under each wrap plan, and write to OUT/rank{N}.json, keyed ``plan/path``, how its values and
gradients compare with the same model unsharded.

Wrap plans, both applied with torch's own ``fully_shard``:
- ``own-units``: every decoder layer, the embedding, the final norm and the (untied) LM head each
  its own FSDP2 unit, then the root. The head never runs forward, so its weight is still a sharded
  ``DTensor`` when the memory path reads it: the case TRL's ``full_tensor()`` guard exists for.
- ``accelerate``: accelerate 1.15's ``fsdp2_prepare_model`` order for a tied model (decoder
  layers; one group of final norm, embedding and LM head with ``reshard_after_forward=False``; the
  root). accelerate drops its FSDP plugin on a CPU, so the order is applied here by hand.

On the ``logps`` path the first call on the sharded model is a no-grad one, as in a run
generating with vLLM (the old-policy log-probs are the training model's first forward); then a
call with backward. Both
ranks see the same seed and batch, so FSDP's averaged gradients equal the unsharded ones.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import traceback

import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM, Qwen2Config

KEEP = 5


def tiny_model(tied: bool):
    config = Qwen2Config(
        vocab_size=300,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=tied,
    )
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32)


def shard(model, plan: str):
    from torch.distributed.fsdp import fully_shard

    for layer in model.model.layers:
        fully_shard(layer)
    if plan == "own-units":
        for module in (model.model.embed_tokens, model.model.norm, model.lm_head):
            fully_shard(module)
    elif plan == "accelerate":
        fully_shard([model.model.norm, model.model.embed_tokens, model.lm_head], reshard_after_forward=False)
    else:
        raise SystemExit(f"unknown plan {plan!r}")
    fully_shard(model)
    return model


def score(model, ids, mask):
    from rlvr_gym.backends.engine.memory import model_completion_logps

    return model_completion_logps(model, ids, mask, KEEP, temperature=0.7, token_chunk=3, vocab_chunk=64)[0]


def logps_objective(model, ids, mask, upstream):
    """The memory path's log-probs, weighted (a loss-like scalar), and the log-probs themselves."""
    logp = score(model, ids, mask)
    return (logp * upstream).sum(), logp


def liger_objective(model, ids, mask, upstream):
    """Liger's fused GRPO loss (eager, as on a CPU) on the same batch split prompt | completion."""
    from liger_kernel.chunked_loss import LigerFusedLinearGRPOLoss

    from rlvr_gym.backends.engine.liger import fused_grpo_loss

    loss_module = LigerFusedLinearGRPOLoss(beta=0.0, compiled=False, use_ref_model=False, temperature=0.7)
    inputs = {
        "prompt_ids": ids[:, :-KEEP],
        "completion_ids": ids[:, -KEEP:],
        "prompt_mask": mask[:, :-KEEP],
        "completion_mask": mask[:, -KEEP:],
        "advantages": upstream[:, 0],
    }
    loss, _ = fused_grpo_loss(model, loss_module, inputs)
    return loss, loss


OBJECTIVES = {"logps": logps_objective, "liger": liger_objective}


def value_and_grads(objective, model, ids, mask, upstream):
    total, value = objective(model, ids, mask, upstream)
    head_sharded_at_use = type(model.get_output_embeddings().weight).__name__ == "DTensor"
    total.backward()
    return value.detach(), head_sharded_at_use


def full_grads(model) -> dict[str, torch.Tensor | None]:
    from torch.distributed.tensor import DTensor

    grads = {}
    for name, param in model.named_parameters():  # same order on every rank: the gathers pair up
        grad = param.grad
        grads[name] = None if grad is None else (grad.full_tensor() if isinstance(grad, DTensor) else grad)
    return grads


def one(plan: str, path: str) -> dict:
    objective = OBJECTIVES[path]
    reference = tiny_model(tied=plan == "accelerate")
    model = shard(copy.deepcopy(reference), plan)
    torch.manual_seed(1)
    ids = torch.randint(0, 300, (2, 12))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # a left-padded row
    upstream = torch.randn(2, KEEP)

    want, _ = value_and_grads(objective, reference, ids, mask, upstream)
    want_grads = dict(reference.named_parameters())
    record: dict = {"plan": plan, "path": path}
    try:
        if path == "logps":
            with torch.no_grad():  # the run's first forward, as with vLLM generation: old-policy log-probs
                first = score(model, ids, mask)
            record["no_grad_max_diff"] = float((first - want).abs().max())
        got, record["head_sharded_at_use"] = value_and_grads(objective, model, ids, mask, upstream)
        grads = full_grads(model)
        record["value_max_diff"] = float((got - want).abs().max())
        record["missing_grads"] = sorted(n for n, g in grads.items() if g is None)
        record["grad_max_diff"] = {
            name: float((grad - want_grads[name].grad).abs().max())
            for name, grad in grads.items()
            if grad is not None
        }
        record["error"] = None
    except Exception as exc:  # the test reads the failure from the file
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()[-3000:]
    return record


def main(out: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    paths = ["logps"] + (["liger"] if importlib.util.find_spec("liger_kernel") else [])
    records = {f"{plan}/{path}": one(plan, path) for plan in ("own-units", "accelerate") for path in paths}
    with open(f"{out}/rank{rank}.json", "w") as handle:
        json.dump(records, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
