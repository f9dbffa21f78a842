"""Run under torchrun (2 ranks, gloo): score completion tokens through the memory path
(``model_completion_logps``: decoder, then the LM head's weight read directly) on an FSDP2-sharded
tiny Qwen2 model, and write to OUT/rank{N}.json how its log-probs and gradients compare with the
same model unsharded.

Wrap plans (argv[1]), both applied with torch's own ``fully_shard``:
- ``own-units``: every decoder layer, the embedding, the final norm and the (untied) LM head each
  its own FSDP2 unit, then the root. The head never runs forward, so its weight is still a sharded
  ``DTensor`` when the memory path reads it: the case TRL's ``full_tensor()`` guard exists for.
- ``accelerate``: accelerate 1.15's ``fsdp2_prepare_model`` order for a tied model (decoder
  layers; one group of final norm, embedding and LM head with ``reshard_after_forward=False``; the
  root). accelerate drops its FSDP plugin on a CPU, so the order is applied here by hand.

The first call on the sharded model is a no-grad one, as in a run generating with vLLM (the
old-policy log-probs are the training model's first forward); then a call with backward. Both
ranks see the same seed and batch, so FSDP's averaged gradients equal the unsharded ones.
"""

from __future__ import annotations

import copy
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


def logps_and_grads(model, ids, mask, upstream):
    logp = score(model, ids, mask)
    head_sharded_at_use = type(model.get_output_embeddings().weight).__name__ == "DTensor"
    (logp * upstream).sum().backward()
    return logp.detach(), head_sharded_at_use


def full_grads(model) -> dict[str, torch.Tensor | None]:
    from torch.distributed.tensor import DTensor

    grads = {}
    for name, param in model.named_parameters():  # same order on every rank: the gathers pair up
        grad = param.grad
        grads[name] = None if grad is None else (grad.full_tensor() if isinstance(grad, DTensor) else grad)
    return grads


def main(plan: str, out: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    reference = tiny_model(tied=plan == "accelerate")
    model = shard(copy.deepcopy(reference), plan)
    torch.manual_seed(1)
    ids = torch.randint(0, 300, (2, 12))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # a left-padded row
    upstream = torch.randn(2, KEEP)

    want, _ = logps_and_grads(reference, ids, mask, upstream)
    want_grads = dict(reference.named_parameters())
    record: dict = {"plan": plan}
    try:
        with torch.no_grad():  # the run's first forward, as with vLLM generation: old-policy log-probs
            first = score(model, ids, mask)
        record["no_grad_logp_max_diff"] = float((first - want).abs().max())
        got, record["head_sharded_at_use"] = logps_and_grads(model, ids, mask, upstream)
        grads = full_grads(model)
        record["logp_max_diff"] = float((got - want).abs().max())
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
    with open(f"{out}/rank{rank}.json", "w") as handle:
        json.dump(record, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
