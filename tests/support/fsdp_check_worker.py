"""Run under torchrun (1 rank, CUDA): build TRL's GRPOTrainer with the fsdp-vllm backend's
arguments, so transformers' own FSDP check runs on them, then again with gradient_checkpointing
forced on beside FSDP's activation checkpointing, which that check must refuse. Writes
OUT/rank0.json: {"ours": "accepted" or the error, "both": the error or "accepted"}."""

from __future__ import annotations

import json
import os
import sys

from rlvr_gym import envs
from rlvr_gym.backends import fsdp_vllm
from rlvr_gym.backends import trl as trl_backend
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.rewards import EnvRewards
from rlvr_gym.backends.trl_adapter import dataset


def build(model: str, out: str, **forced) -> str:
    from trl import GRPOTrainer

    env = envs.make("arith")
    config = RunConfig(model=model, output_dir=out, num_generations=2, prompts_per_step=1, max_steps=1)
    rewards = EnvRewards(env, num_generations=2, timeout_s=30)
    overrides = {**fsdp_vllm.fsdp_overrides(model, generation="transformers"), **forced}
    try:
        GRPOTrainer(
            model=model,
            reward_funcs=rewards.functions(),
            args=trl_backend.trl_config(config, rewards, **overrides),
            train_dataset=dataset(env, "train"),
        )
    except ValueError as exc:
        return str(exc)
    finally:
        rewards.close()
    return "accepted"


if __name__ == "__main__":
    model, out = sys.argv[1], sys.argv[2]
    result = {"ours": build(model, out), "both": build(model, out, gradient_checkpointing=True)}
    with open(os.path.join(out, f"rank{os.environ['RANK']}.json"), "w") as handle:
        json.dump(result, handle)
