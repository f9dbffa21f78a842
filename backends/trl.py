"""The ``trl`` backend: TRL's ``GRPOTrainer`` on any env, CPU or GPU, full or LoRA.

The env becomes a ``datasets.Dataset`` of prompts (plus the columns that locate each task) and
one reward function per rubric component, with the rubric's weights as TRL's ``reward_weights``
— built by the public adapter :mod:`rlvr_gym.backends.trl_adapter`, the same one a user's own
TRL script calls. Nothing here knows which env it trains.

A tool env (:class:`~rlvr_gym.envs.MultiTurnEnv`) trains through TRL's own tool loop: the same
dataset of task rows, ``environment_factory(env)`` (``reset(**row)`` poses the row's task, so every
rollout of a GRPO group gets one task) and the episode reward of
:class:`~rlvr_gym.backends.tool_rewards.EpisodeRewards`, with ``max_tool_calling_iterations`` set
to the env's ``max_turns``. The DeepSpeed and FSDP backends call this function, so they run the
same loop.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr_gym.backends.config import TRACKERS, RunConfig
from rlvr_gym.backends.console import quiet_libraries, use_progress_line
from rlvr_gym.backends.metrics import MetricsWriter, optimizer_state_summary, plot_rewards, truncate_metrics
from rlvr_gym.backends.protocol import RunResult, run_result, steps_done, write_trainer_state
from rlvr_gym.backends.rewards import EnvRewards
from rlvr_gym.backends.rollouts import RolloutLog
from rlvr_gym.backends.run_layout import (
    CHECKPOINT_PREFIX,
    FINAL_DIR,
    OPTIMIZER_FILE,
    ROLLOUTS_FILE,
    TRAINER_STATE,
)
from rlvr_gym.backends.scoring import make_scorer
from rlvr_gym.backends.tool_bridge import environment_factory
from rlvr_gym.backends.tool_rewards import EpisodeRewards
from rlvr_gym.backends.trl_adapter import dataset as build_dataset
from rlvr_gym.backends.trl_adapter import env_rewards
from rlvr_gym.envs import Env, MultiTurnEnv
from rlvr_gym.error import InvalidArgumentError, MissingPathError, NotAvailableError

logger = logging.getLogger("rlvr_gym.backends")

NAME = "trl"
REQUIRED = ("torch", "trl", "transformers", "datasets", "accelerate")


@dataclass(frozen=True)
class Options:
    """The ``trl`` backend's options through ``train(..., backend_options=...)``: none (it runs in
    this process; ``trainer_class`` and TRL overrides are for the backends built on it)."""


def available(**_options: Any) -> tuple[bool, str]:
    """Whether this backend can run here, and if not, exactly what is missing."""
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        return False, f"missing packages {missing}: pip install 'rlvr-gym[trl]'"
    return True, "TRL GRPOTrainer " + ("on CUDA" if cuda_available() else "on CPU")


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU (the backends built on this one ask the same question)."""
    import torch

    return torch.cuda.is_available()


def trl_config(config: RunConfig, rewards: EnvRewards | EpisodeRewards, **overrides: Any):
    """TRL's ``RunConfig`` for our config (CPU: fp32 and ``use_cpu``; GPU: bf16 when supported)."""
    import torch
    from trl import GRPOConfig as TRLGRPOConfig

    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    kwargs = dict(
        output_dir=config.output_dir,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.completions_per_step,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        learning_rate=config.learning_rate,
        lr_scheduler_type="constant",
        beta=config.beta,
        epsilon=config.epsilon,
        epsilon_high=config.epsilon_high,
        loss_type=config.loss_type,
        scale_rewards=config.scale_rewards,
        reward_weights=[rewards.weights[name] for name in rewards.names],
        logging_steps=config.logging_steps,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.keep_checkpoints or None,
        seed=config.seed,
        data_seed=config.seed,
        report_to=list(config.report_to) or "none",
        use_cpu=not cuda,
        bf16=bf16,
        fp16=False,
        remove_unused_columns=False,
        log_completions=False,
        disable_tqdm=False,
        gradient_checkpointing=config.gradient_checkpointing,
    )
    kwargs.update(overrides)
    return TRLGRPOConfig(**kwargs)


def check_trackers(report_to: tuple[str, ...]) -> None:
    """Refuse a tracker whose package is missing up front, naming the extra that installs it."""
    for tracker in report_to:
        modules = ("tensorboard", "tensorboardX") if tracker == "tensorboard" else (tracker,)
        if not any(importlib.util.find_spec(m) is not None for m in modules):
            raise NotAvailableError(
                f"--report-to {tracker}: {tracker} is not installed (pip install 'rlvr-gym[{TRACKERS[tracker]}]')"
            )


def peft_config(config: RunConfig):
    if config.lora is None:
        return None
    from peft import LoraConfig

    lora = config.lora
    targets = lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules)
    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )


def metrics_callback(writer: MetricsWriter):
    """A transformers ``TrainerCallback`` that feeds :class:`MetricsWriter`."""
    from transformers import TrainerCallback

    class _Metrics(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            writer.step_begin()

        def on_step_end(self, args, state, control, **kwargs):
            writer.step_end()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs and ("reward" in logs or "loss" in logs):
                writer.write(state.global_step, dict(logs))

        def on_train_end(self, args, state, control, optimizer=None, **kwargs):
            # Evidence of where the optimizer state lived (CPU under ZeRO offload, else the GPU).
            if state.is_world_process_zero and optimizer is not None:
                summary = optimizer_state_summary(optimizer)
                (writer.path.parent / OPTIMIZER_FILE).write_text(json.dumps(summary, indent=2) + "\n")

    return _Metrics()


def last_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest *complete* ``checkpoint-N`` (one a kill interrupted mid-save is skipped: its
    ``trainer_state.json``, the last file the Trainer writes into it, is missing)."""
    directory = Path(output_dir)
    if not directory.is_dir():
        return None
    complete = [
        (step, p) for p in directory.glob(f"{CHECKPOINT_PREFIX}*") if (step := steps_done(p)) is not None
    ]
    return max(complete)[1] if complete else None


def trainer_class_for(config: RunConfig, base: Any = None) -> type:
    """The trainer class a run uses: ``base`` (default TRL's ``GRPOTrainer``), Liger's loss if
    ``config.liger_loss``, and the memory path of ``backends/engine/memory.py`` as the config switches it."""
    from trl import GRPOTrainer

    trainer_class = base or GRPOTrainer
    if config.liger_loss:
        from rlvr_gym.backends.engine.liger import liger_trainer_class

        trainer_class = liger_trainer_class(trainer_class)
    if config.chunked_logps or config.offload_activations:
        from rlvr_gym.backends.engine.memory import memory_trainer_class

        trainer_class = memory_trainer_class(
            trainer_class,
            chunked_logps=config.chunked_logps,
            offload_activations=config.offload_activations,
            token_chunk=config.logps_token_chunk,
            vocab_chunk=config.logps_vocab_chunk,
        )
    return trainer_class


def train(
    env: Env,
    config: RunConfig,
    *,
    model: str | Path,
    resume: bool = False,
    trainer_class: Any = None,
    **trl_overrides: Any,
) -> RunResult:
    """Run GRPO on ``env`` with TRL; ``model`` is a path or hub id (already warm-started if wanted).

    ``resume=True`` continues from the last checkpoint in ``config.output_dir`` with the same
    data order (TRL's sampler is seeded and the Trainer skips consumed batches).
    """
    ok, why = available()
    if not ok:
        raise NotAvailableError(f"trl backend unavailable: {why}")
    config = config.for_env(env.id)  # a run folder even when called without trainers.train
    from transformers import AutoTokenizer

    check_trackers(config.report_to)
    if not config.verbose:
        quiet_libraries()
    trainer_class = trainer_class_for(config, trainer_class)

    output_dir = Path(config.output_dir)
    checkpoint = last_checkpoint(output_dir) if resume else None
    if resume and checkpoint is None:
        raise MissingPathError(f"--resume: no checkpoint-* folder in {output_dir}")
    tokenizer = AutoTokenizer.from_pretrained(str(model))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    rollout_log = output_dir / ROLLOUTS_FILE if config.rollout_log_steps else None
    tool_loop: dict[str, Any] = {}
    rewards: EnvRewards | EpisodeRewards
    if isinstance(env, MultiTurnEnv):  # TRL's tool loop: one task per group, episodes scored whole
        if config.scoring != "local":
            raise InvalidArgumentError(
                f"{env.id} is a tool env: its episodes are scored as they are played, on this host; "
                f"scoring={config.scoring!r} serves single-step envs only"
            )
        rewards = EpisodeRewards(
            env,
            num_generations=config.num_generations,
            rollout_log=rollout_log,
            rollout_every=config.rollout_log_steps,
        )
        tool_loop = {"environment_factory": environment_factory(env)}
        trl_overrides = {"max_tool_calling_iterations": env.max_turns, **trl_overrides}
    else:
        rewards = env_rewards(
            env,
            num_generations=config.num_generations,
            timeout_s=config.verify_timeout_s,
            scorer=make_scorer(env, config.scoring, ray_address=config.ray_address),
            rollout_log=rollout_log,
            rollout_every=config.rollout_log_steps,
        )
    dataset = build_dataset(
        env, env.splits[0], tokenizer=tokenizer, max_prompt_length=config.max_prompt_length
    )
    writer = MetricsWriter(output_dir, verify_clock=lambda: rewards.verify_seconds)
    trainer = trainer_class(
        model=str(model),
        reward_funcs=rewards.functions(),
        args=trl_config(config, rewards, **trl_overrides),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config(config),
        callbacks=[metrics_callback(writer)],
        **tool_loop,
    )
    # The run's shared files belong to one process: in a multi-process run every rank executes
    # this function on the same folder, and only rank 0 logs metrics and rollouts.
    main = trainer.is_world_process_zero()
    if not main:
        rewards.rollout_log = None
    if main and checkpoint is not None:
        step = steps_done(checkpoint)
        truncate_metrics(output_dir, step)
        with RolloutLog(output_dir / ROLLOUTS_FILE, duplicates="skip") as rollouts:
            rollouts.truncate(step)
    elif main:
        for name in (writer.path.name, ROLLOUTS_FILE, TRAINER_STATE):
            (output_dir / name).unlink(missing_ok=True)
    if not config.verbose:
        use_progress_line(trainer)
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    finally:
        rewards.close()
    model_dir = output_dir / FINAL_DIR
    trainer.save_model(str(model_dir))  # every rank: FSDP/ZeRO gather the weights collectively
    if main:
        tokenizer.save_pretrained(str(model_dir))
        plot_rewards(output_dir)
    if trainer.is_local_process_zero():  # every machine's folder records how far the run got
        write_trainer_state(trainer.state, output_dir)
    trainer.accelerator.wait_for_everyone()
    return run_result(output_dir)
