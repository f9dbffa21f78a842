"""Run under torchrun (2 ranks, gloo, CPU): one GRPO step of the trl backend, recording which rank
writes the run's shared files (tokenizer, reward plot, metrics reset). Every call still goes through."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from transformers import PreTrainedTokenizerBase

from rlvr_gym import envs
from rlvr_gym.backends import trl as trl_backend
from rlvr_gym.backends.config import RunConfig

rank = int(os.environ["RANK"])
model, out = sys.argv[1], Path(sys.argv[2])
calls: list[str] = []


def recorded(name, function):
    def wrapper(*args, **kwargs):
        calls.append(name)
        return function(*args, **kwargs)

    return wrapper


save_tokenizer = PreTrainedTokenizerBase.save_pretrained
PreTrainedTokenizerBase.save_pretrained = recorded("save_tokenizer", save_tokenizer)
trl_backend.plot_rewards = recorded("plot_rewards", trl_backend.plot_rewards)
trl_backend.truncate_metrics = recorded("truncate_metrics", trl_backend.truncate_metrics)
unlink = Path.unlink


def recorded_unlink(self, *args, **kwargs):
    if self.name == "metrics.jsonl":
        calls.append("reset_metrics")
    return unlink(self, *args, **kwargs)


Path.unlink = recorded_unlink
config = RunConfig(
    model=model,
    max_steps=1,
    num_generations=2,
    prompts_per_step=1,
    max_completion_length=4,
    save_steps=100,
    gradient_checkpointing=False,
    output_dir=str(out / "run"),
)
result = trl_backend.train(envs.make("arith"), config, model=model)
(out / f"rank{rank}.json").write_text(json.dumps({"calls": calls, "steps": result.steps}))
