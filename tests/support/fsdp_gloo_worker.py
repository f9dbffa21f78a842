"""Run under torchrun (2 ranks, gloo): FSDP2-shard the tiny model with the wrap plan fsdp-vllm
generates, train one step, and write what each rank holds to OUT/rank{N}.json.

The backend hands the plan (``transformer_layer_cls_to_wrap``) to accelerate, which drops FSDP on
a CPU; here torch's ``fully_shard`` applies it the way accelerate's FSDP2 plugin does, so the
plan is checked on CPU. The wrapping is the test's own: no backend code calls it."""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM


def shard(model, layer_classes):
    """``fully_shard`` every decoder layer named in the plan, then the root (accelerate's order)."""
    from torch.distributed.fsdp import fully_shard

    layers = [m for m in model.modules() if type(m).__name__ in set(layer_classes)]
    assert layers, f"no module of classes {layer_classes} in {type(model).__name__}"
    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def main(model_dir: str, out: str) -> None:
    from torch.distributed.tensor import DTensor

    from rlvr_gym.backends.fsdp_vllm import decoder_layer_classes

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    full = sum(p.numel() for p in model.parameters())
    classes = decoder_layer_classes(model_dir)
    shard(model, classes)
    params = list(model.parameters())
    local = sum(p.to_local().numel() for p in params if isinstance(p, DTensor))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, model.config.vocab_size, (2, 16))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    wrapped = sorted({type(m).__name__ for m in model.modules() if type(m).__name__.startswith("FSDP")})
    with open(f"{out}/rank{rank}.json", "w") as handle:
        json.dump(
            {
                "world": world,
                "classes": classes,
                "all_dtensor": all(isinstance(p, DTensor) for p in params),
                "full_params": full,
                "local_params": local,
                "loss": float(loss),
                "fsdp_module_types": wrapped,
            },
            handle,
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
