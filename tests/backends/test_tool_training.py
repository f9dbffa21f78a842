"""TRL end to end: a tool env trained through ``environment_factory`` (10 steps, tiny model, CPU).

The docs' whole script (trl-integration.md, `environment_factory`) runs as written in
tests/project/test_docs.py, with every other page's blocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")


def _tool_call_warm_start(model_dir: Path, env, steps: int = 150, full: int = 20, context: int = 32) -> None:
    """A few supervised steps on one ``submit_answer`` call, so the tiny model emits tool calls
    (a random one never does, and TRL's tool loop would go unexercised). The answer is the
    same for every task: the point is the call, which sampling then varies."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    tools = env.tool_schemas()
    model.train()
    for step in range(steps + full):
        obs, _ = env.reset(seed=step % 4)
        call = {"name": "submit_answer", "arguments": {"answer": "18"}}
        prompt = tokenizer.apply_chat_template(obs, tools=tools, add_generation_prompt=True, tokenize=False)
        answer = f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>\n"
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
        if step < steps:  # cheap steps on the prompt's end (the call follows the assistant header),
            prompt_ids = prompt_ids[-context:]  # then a few on whole prompts
        ids = torch.tensor([prompt_ids + answer_ids])
        labels = torch.tensor([[-100] * len(prompt_ids) + answer_ids])
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(model_dir)


@pytest.mark.slow
def test_a_tool_env_trains_ten_steps_through_environment_factory(tmp_path, monkeypatch):
    from trl import GRPOConfig, GRPOTrainer

    from rlvr_gym import envs
    from rlvr_gym.backends.trl_adapter import dataset, environment_factory, reward_funcs
    from rlvr_gym.trainers.tiny_model import build_tiny_model

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    env = envs.make("gsm8k-python", max_turns=2)
    model_dir = build_tiny_model(tmp_path / "tiny", env, tools=True, vocab_size=2048)
    _tool_call_warm_start(model_dir, env)
    factory = environment_factory(env)
    trainer = GRPOTrainer(
        model=str(model_dir),
        environment_factory=factory,
        train_dataset=dataset(env, "train"),
        reward_funcs=reward_funcs(env),
        args=GRPOConfig(
            output_dir=str(tmp_path / "run"),
            max_steps=10,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=40,
            max_tool_calling_iterations=2,
            temperature=1.0,
            learning_rate=1e-4,
            use_cpu=True,
            bf16=False,
            save_strategy="no",
            report_to=[],
            logging_steps=1,
            remove_unused_columns=False,
        ),
    )
    trainer.train()
    logs = [row for row in trainer.state.log_history if "rewards/episode/mean" in row]
    assert len(logs) == 10 and trainer.state.global_step == 10
    assert sum(row["tools/call_frequency"] for row in logs) > 0  # TRL called our tools
    pool = trainer._environment_pool[None]
    assert any(rollout.info.get("turns") for rollout in pool)  # ... and they stepped the env
