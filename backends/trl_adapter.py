"""Plug an env into *your own* TRL script: a dataset and reward functions for ``GRPOTrainer``.

For example (the docs' training page runs a complete version offline)::

    import rlvr_gym as rg
    from rlvr_gym.backends.trl_adapter import dataset, device_args, reward_funcs, reward_weights
    from trl import GRPOConfig, GRPOTrainer

    env = rg.make("gsm8k")
    trainer = GRPOTrainer(
        model="Qwen/Qwen2.5-0.5B-Instruct",
        reward_funcs=reward_funcs(env),
        train_dataset=dataset(env, "train"),
        args=GRPOConfig(output_dir="runs/gsm8k", reward_weights=reward_weights(env), **device_args()),
    )
    trainer.train()

What the five-line glue people write by hand loses, this keeps: one reward function per rubric
component (TRL logs each as ``rewards/<name>/mean``) with the rubric's weights, so the weighted
sum is the env's own score; a verifier error or timeout is ``None`` (TRL leaves the row
unscored) rather than a silent 0; and rows find their task by ``(task_split, task_index)``
columns, not by position, so TRL's shuffling and its per-process sharding cannot pair a
completion with the wrong answer key (each process's env poses the same tasks — ``check_env``'s
``instances`` rule). The ``trl`` backend builds its trainer from these same functions.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import gymnasium

from rlvr_gym.backends.rewards import EnvRewards, RewardFunction
from rlvr_gym.backends.tool_bridge import ToolEnvAdapter, environment_factory
from rlvr_gym.backends.tool_rewards import EpisodeRewards
from rlvr_gym.envs import Env, MultiTurnEnv
from rlvr_gym.envs.env import unwrap
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError

logger = logging.getLogger("rlvr_gym.backends")

LOCATOR_COLUMNS = ("task_env", "task_split", "task_index")

__all__ = [
    "LOCATOR_COLUMNS",
    "ToolEnvAdapter",
    "curriculum_dataset",
    "dataset",
    "env_rewards",
    "environment_factory",
    "reward_funcs",
    "reward_weights",
]


def env_of(env: Env | gymnasium.Env, what: str) -> Env:
    """The rlvr_gym env these helpers work on: ``env`` itself, or the one inside the wrappers of
    ``gymnasium.make("rlvr_gym/...")``; anything else is refused naming the helper."""
    found = unwrap(env)
    if found is None:
        raise InvalidTypeError(f"{what} needs an rlvr_gym env, got {type(env).__name__}")
    return found


def dataset(
    env: Env | gymnasium.Env,
    split: str = "train",
    *,
    tokenizer: Any = None,
    max_prompt_length: int | None = None,
):
    """The prompts of ``split`` as a ``datasets.Dataset`` for ``GRPOTrainer(train_dataset=...)``.

    Columns: ``prompt`` (chat messages or text), the locators ``task_env`` (exact versioned id),
    ``task_split`` and ``task_index``, and the task's scalar fields as ``task_<field>`` for
    inspection (rewards never read those: they look the task up in the env). For a tool env the
    rows are also what ``environment_factory``'s ``reset(**row)`` poses: one task per GRPO group. With a
    ``tokenizer`` and ``max_prompt_length``, longer prompts are dropped with a warning rather than
    silently truncated.
    """
    env = env_of(env, "dataset()")
    from datasets import Dataset

    label, rows, dropped = env.id, [], 0
    tools = env.tool_schemas() if isinstance(env, MultiTurnEnv) else None  # TRL renders them in the prompt
    for index, task in enumerate(env.tasks(split)):
        prompt = env.prompt(task)
        if (
            tokenizer is not None
            and max_prompt_length is not None
            and _prompt_tokens(tokenizer, prompt, tools) > max_prompt_length
        ):
            dropped += 1
            continue
        extras = {
            f"task_{k}": v
            for k, v in task.items()
            if isinstance(v, str | int | float | bool) and f"task_{k}" not in LOCATOR_COLUMNS
        }
        rows.append({"prompt": prompt, "task_env": label, "task_split": split, "task_index": index, **extras})
    if dropped:
        logger.warning(
            "dropped %d of %d %s prompts longer than %d tokens",
            dropped,
            dropped + len(rows),
            split,
            max_prompt_length,
        )
    if not rows:
        raise InvalidArgumentError(f"no {split} prompt fits max_prompt_length={max_prompt_length}")
    return Dataset.from_list(rows)


def curriculum_dataset(env: Env | gymnasium.Env, *, seed: int = 0):
    """An endless ``datasets.IterableDataset`` of train prompts from the env's *current*
    curriculum stage (``env.stage_indices()``), for an env that schedules difficulty.

    The reward functions move the env through its stages from TRL's ``trainer_state``; rows
    drawn after that come from the new stage (TRL draws a generation batch ahead, so a change
    shows a batch or two later). Needs ``GRPOConfig(max_steps=..., shuffle_dataset=False)``: TRL's
    buffered shuffle of an iterable dataset would draw 1,000 rows ahead, all from the first stage.
    Columns as :func:`dataset`.
    """
    env = env_of(env, "curriculum_dataset()")
    if not callable(getattr(env, "stage_indices", None)):
        raise InvalidTypeError(f"{type(env).__name__} has no curriculum (stage_indices); use dataset()")
    from datasets import IterableDataset

    def rows():
        rng = random.Random(f"rlvr-gym/curriculum/{seed}")
        tasks, label = env.tasks("train"), env.id
        while True:
            indices = env.stage_indices()
            index = indices[rng.randrange(len(indices))]
            task = tasks[index]
            extras = {f"task_{k}": v for k, v in task.items() if isinstance(v, str | int | float | bool)}
            extras = {k: v for k, v in extras.items() if k not in LOCATOR_COLUMNS}
            yield {
                "prompt": env.prompt(task),
                "task_env": label,
                "task_split": "train",
                "task_index": index,
                **extras,
            }

    return IterableDataset.from_generator(rows)


def env_rewards(
    env: Env | gymnasium.Env,
    *,
    num_generations: int | None = None,
    timeout_s: float = 60.0,
    **rollouts: Any,
) -> EnvRewards:
    """The reward functions' shared state (one verification per batch, reason counts, metrics);
    ``close()`` it when done. ``num_generations=None`` reads the group size off each batch;
    ``rollouts`` (``rollout_log``, ``rollout_every``, ``rollout_samples``) sample what the policy
    wrote into a JSONL file."""
    env = env_of(env, "reward_funcs()")
    return EnvRewards(env, num_generations=num_generations, timeout_s=timeout_s, env_label=env.id, **rollouts)


def reward_funcs(
    env: Env | gymnasium.Env, *, timeout_s: float = 60.0, asynchronous: bool = False
) -> list[RewardFunction]:
    """One TRL reward function per rubric component, in rubric order, for ``GRPOTrainer(reward_funcs=...)``.

    Each returns the component's score per completion, or ``None`` where the verifier erred or
    the batch overran ``timeout_s``; accuracy, reason shares, verifier errors and advantage
    statistics go to TRL's logs through its ``log_metric`` hook. Pass :func:`reward_weights` as
    ``GRPOConfig(reward_weights=...)`` so the weighted sum is the env's score.

    ``asynchronous=True`` returns coroutine functions: TRL runs them concurrently with your
    other async reward functions (an LLM judge, a remote scorer) on its event loop, so a code
    env's sandbox batch no longer holds up the rest. ``trainer_state`` reaches an env that
    schedules difficulty (``env.schedule(state)``, e.g. arith's ``curriculum``) either way.

    A tool env (:class:`~rlvr_gym.envs.MultiTurnEnv`) is scored on whole episodes: its one
    function (:class:`~rlvr_gym.backends.tool_rewards.EpisodeRewards`) needs TRL's tool loop,
    ``GRPOTrainer(environment_factory=environment_factory(env), train_dataset=dataset(env))``.
    """
    env = env_of(env, "reward_funcs()")
    if isinstance(env, MultiTurnEnv):  # scored on whole episodes, under environment_factory
        return EpisodeRewards(env).functions()
    rewards = env_rewards(env, timeout_s=timeout_s)
    return rewards.async_functions() if asynchronous else rewards.functions()


def reward_weights(env: Env | gymnasium.Env) -> list[float]:
    """The rubric's normalized weights, in the order of :func:`reward_funcs` (they sum to 1)."""
    env = env_of(env, "reward_weights()")
    if isinstance(env, MultiTurnEnv):
        return [1.0]
    return [EnvRewards.weights_of(env)[name] for name in EnvRewards.weights_of(env)]


def device_args() -> dict[str, Any]:
    """The precision and device keywords for TRL's ``GRPOConfig`` on this machine, so one script
    runs on a CPU and a GPU alike: ``GRPOConfig`` defaults to bf16, which a CPU refuses ("Your setup
    doesn't support bf16/gpu"). CPU: ``use_cpu=True, bf16=False``; GPU: bf16 where supported.

    >>> from trl import GRPOConfig  # doctest: +SKIP
    >>> GRPOConfig(output_dir="runs/x", **device_args())  # doctest: +SKIP
    """
    import torch

    if not torch.cuda.is_available():
        return {"use_cpu": True, "bf16": False}
    return {"bf16": bool(torch.cuda.is_bf16_supported())}


def _prompt_tokens(tokenizer: Any, prompt: Any, tools: list[dict[str, Any]] | None = None) -> int:
    if isinstance(prompt, str):
        return len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    ids = tokenizer.apply_chat_template(
        prompt, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    return len(ids["input_ids"])
