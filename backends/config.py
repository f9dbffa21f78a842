"""RunConfig: one backend-neutral description of a GRPO run.

Backends translate it into their engine's own configuration; nothing here names an engine.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlvr_gym.backends.scoring import check_scoring
from rlvr_gym.error import InvalidArgument

TRACKERS = {"tensorboard": "tensorboard", "wandb": "wandb"}
"""Trackers ``report_to`` accepts -> the rlvr-gym extra that installs each."""

LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo"]
ScaleRewards = Literal["group", "batch", "none"]


TINY_DEMO: dict[str, Any] = {
    "warm_start_steps": 200,
    "learning_rate": 1e-3,
    "beta": 0.04,
    "num_generations": 16,
    "prompts_per_step": 4,
    "max_completion_length": 8,
    "max_steps": 400,
}
"""Settings under which GRPO visibly teaches the tiny offline model a built-in env on a CPU in
minutes. The 200-step supervised warm start teaches the answer tag and when to stop but leaves
accuracy at about chance on ``TINY_DEMO_ENV['arith']`` (first fifth 0.16 at seed 0); GRPO then
raises it (last fifth 0.62). A longer warm start already solves the task (240 steps: 0.43 in the
first fifth), a shorter or answer-free one leaves GRPO flat at chance within 500 steps. The KL
term (``beta``) keeps the answer format from drifting; without it lr >= 2e-3 broke the format."""

TINY_DEMO_ENV: dict[str, dict[str, Any]] = {
    "arith": {
        "num_steps": 1,
        "max_operand": 5,
        "operations": "+",
        "word_problems": False,
        "proximity_weight": 0.0,
    },
}
"""Env settings of the tiny-model demo (``--env-arg`` still wins): ``a + b`` with a, b in 1..5,
no shaped proximity reward (it pays the most common answer whatever the question, so the model
collapses onto one answer). The env's own defaults (two-step word problems up to 20) stay: the
2-layer, 64-wide model's accuracy on them barely moves (0.00 -> 0.02 over 150 steps)."""


@dataclass(frozen=True)
class LoraSettings:
    """PEFT LoRA adapter settings (``target_modules="all-linear"`` adapts every linear layer)."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: tuple[str, ...] | str = "all-linear"

    def __post_init__(self) -> None:
        if self.r < 1 or self.alpha < 1:
            raise InvalidArgument(f"LoRA r and alpha must be >= 1, got r={self.r}, alpha={self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise InvalidArgument(f"LoRA dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class RunConfig:
    """A GRPO run, independent of the backend that executes it.

    ``model=None`` means the tiny offline model built for the env (see ``rlvr-gym tiny-model``);
    ``warm_start_steps`` runs that many supervised steps on the env's reference answers before
    GRPO (a stated shortcut so a tiny model has something to reinforce).

    Memory path (``backends/engine/memory.py``; each switch exists so ``bench/grpo_memory.py`` can
    measure what it saves): ``chunked_logps`` scores completion tokens in tiles of
    ``logps_token_chunk × logps_vocab_chunk`` logits for the policy, old-policy and reference
    passes; ``gradient_checkpointing`` recomputes layer activations in backward;
    ``offload_activations`` keeps the activations saved for backward in CPU memory (GPU only).

    Console and logs: ``verbose`` prints the raw per-step dict and the libraries' own bars (else
    one live progress line); ``report_to`` names trackers (``tensorboard``, ``wandb``);
    ``rollout_log_steps`` samples training rollouts to ``rollouts.jsonl`` every N steps (0: off).

    Checkpoints: ``checkpoint-N/`` every ``save_steps``; only the last ``keep_checkpoints`` stay
    on disk (0: all), beside ``final/`` (TRL's ``save_total_limit`` deletes the older ones).

    Scoring (``backends/scoring``): ``scoring="local"`` verifies on this host; ``"ray"`` on actors
    across the Ray cluster at ``ray_address`` (``host:port``; ``None``: ``RAY_ADDRESS`` or the
    cluster ``ray start`` left here), for GPU hosts whose CPUs cannot keep up with scoring.
    """

    model: str | None = None
    env_id: str = "arith"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    num_generations: int = 4
    prompts_per_step: int = 4
    gradient_accumulation_steps: int = 1
    max_prompt_length: int = 512
    max_completion_length: int = 64
    temperature: float = 1.0
    learning_rate: float = 1e-5
    beta: float = 0.0
    epsilon: float = 0.2
    epsilon_high: float | None = None
    loss_type: LossType = "dapo"
    scale_rewards: ScaleRewards = "group"
    lora: LoraSettings | None = None
    liger_loss: bool = False
    chunked_logps: bool = True
    logps_token_chunk: int = 1024
    logps_vocab_chunk: int = 8192
    gradient_checkpointing: bool = True
    offload_activations: bool = True
    max_steps: int = 100
    warm_start_steps: int = 0
    warm_start_learning_rate: float = 3e-3
    seed: int = 0
    output_dir: str = "runs/grpo"
    logging_steps: int = 1
    save_steps: int = 25
    keep_checkpoints: int = 2
    report_to: tuple[str, ...] = ()
    verify_timeout_s: float = 60.0
    verbose: bool = False
    rollout_log_steps: int = 10
    scoring: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        positive = (
            "num_generations",
            "prompts_per_step",
            "gradient_accumulation_steps",
            "max_prompt_length",
            "max_completion_length",
            "max_steps",
            "logging_steps",
            "save_steps",
            "logps_token_chunk",
            "logps_vocab_chunk",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(f"{name} must be an integer >= 1, got {value!r}")
        if self.num_generations < 2:
            raise InvalidArgument(
                f"num_generations must be >= 2 (GRPO compares completions in a group), got {self.num_generations}"
            )
        if (
            isinstance(self.keep_checkpoints, bool)
            or not isinstance(self.keep_checkpoints, int)
            or self.keep_checkpoints < 0
        ):
            raise InvalidArgument(
                f"keep_checkpoints must be an integer >= 0 (0: keep all), got {self.keep_checkpoints!r}"
            )
        if self.warm_start_steps < 0:
            raise InvalidArgument(f"warm_start_steps must be >= 0, got {self.warm_start_steps}")
        for name in ("learning_rate", "temperature", "warm_start_learning_rate", "verify_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise InvalidArgument(f"{name} must be a finite number > 0, got {value!r}")
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise InvalidArgument(f"beta (KL coefficient) must be >= 0, got {self.beta}")
        if not 0 < self.epsilon < 1 or (self.epsilon_high is not None and not 0 < self.epsilon_high < 1):
            raise InvalidArgument(
                f"epsilon/epsilon_high must lie in (0, 1), got {self.epsilon}/{self.epsilon_high}"
            )
        if self.loss_type not in LossType.__args__:
            raise InvalidArgument(f"loss_type must be one of {LossType.__args__}, got {self.loss_type!r}")
        if self.scale_rewards not in ScaleRewards.__args__:
            raise InvalidArgument(
                f"scale_rewards must be one of {ScaleRewards.__args__}, got {self.scale_rewards!r}"
            )
        report_to = (self.report_to,) if isinstance(self.report_to, str) else tuple(self.report_to)
        report_to = tuple(dict.fromkeys(t for t in report_to if t != "none"))
        unknown = [t for t in report_to if t not in TRACKERS]
        if unknown:
            raise InvalidArgument(
                f"report_to: unknown tracker(s) {unknown}; choose from {list(TRACKERS)} or 'none'"
            )
        object.__setattr__(self, "report_to", report_to)
        if (
            isinstance(self.rollout_log_steps, bool)
            or not isinstance(self.rollout_log_steps, int)
            or self.rollout_log_steps < 0
        ):
            raise InvalidArgument(
                f"rollout_log_steps must be an integer >= 0 (0: none), got {self.rollout_log_steps!r}"
            )
        check_scoring(self.scoring, self.ray_address)
        if isinstance(self.lora, dict):
            object.__setattr__(self, "lora", LoraSettings(**self.lora))

    @property
    def completions_per_step(self) -> int:
        """Completions generated per optimizer step (prompts × group size)."""
        return self.prompts_per_step * self.num_generations

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, default=list) + "\n")
