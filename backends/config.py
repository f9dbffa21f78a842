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

from rlvr_gym.backends.scoring import Scoring, check_scoring
from rlvr_gym.error import InvalidArgumentError

TRACKERS = {"tensorboard": "tensorboard", "wandb": "wandb"}
"""Trackers ``report_to`` accepts -> the rlvr-gym extra that installs each."""

LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo"]
ScaleRewards = Literal["group", "batch", "none"]


def about(help: str, **cli: Any) -> dict[str, Any]:
    """Field metadata: ``help`` is the field's one-line description (the CLI's ``--help`` text);
    ``cli`` says how the flag differs from ``--field-name`` (``flag``, ``metavar``, ``choices``,
    or ``type`` + ``convert`` for a field given on the command line as a simpler value;
    ``cli_default``: what the command fills in when the flag is not given, where that is not the
    field's own default)."""
    return {"help": help, **cli}


def lora_of_rank(r: int) -> LoraSettings | None:
    """``--lora-r R``: a LoRA adapter of rank R with the other settings' defaults; 0: none."""
    return LoraSettings(r=r) if r else None


@dataclass(frozen=True)
class LoraSettings:
    """PEFT LoRA adapter settings (``target_modules="all-linear"`` adapts every linear layer)."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: tuple[str, ...] | str = "all-linear"

    def __post_init__(self) -> None:
        if self.r < 1 or self.alpha < 1:
            raise InvalidArgumentError(f"LoRA r and alpha must be >= 1, got r={self.r}, alpha={self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise InvalidArgumentError(f"LoRA dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class RunConfig:
    """A GRPO run, independent of the backend that executes it.

    Every field's help text is its ``metadata["help"]``; ``rlvr-gym train``'s flags are made
    from these fields (see :mod:`rlvr_gym.trainers.flags`), so the CLI and the Python API share
    one set of defaults. ``env_id`` names the env once: ``train(env, config)`` refuses a config
    that names another env than ``env``; ``output_dir=None`` is ``runs/<env id>``.

    ``model=None`` means the tiny offline model built for the env (see ``rlvr-gym tiny-model``);
    ``warm_start_steps`` runs that many supervised steps on the env's reference answers before
    GRPO (a stated shortcut so a tiny model has something to reinforce). On a tool env those are
    reference episodes; ``warm_start_tool_fraction`` below 1 makes the rest direct answers (the gold
    answer, no tool call), so the warm-started policy calls the tools in about that share of
    episodes and GRPO has the call itself to select (see ``trainers/demo.py``'s ``big-add``).

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

    model: str | None = field(
        default=None, metadata=about("HF model path or hub id (default: the tiny offline model)")
    )
    env_id: str | None = field(
        default=None,
        metadata=about("registered env id", flag="--env", metavar="ID"),
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict,
        metadata=about(
            "env keyword argument, value parsed as JSON and typed by the env's config (repeatable)",
            flag="--env-arg",
            metavar="KEY=VALUE",
        ),
    )
    num_generations: int = field(default=4, metadata=about("completions per prompt (group size)"))
    prompts_per_step: int = field(default=4, metadata=about("prompts per optimizer step"))
    gradient_accumulation_steps: int = field(default=1, metadata=about("micro-batches per optimizer step"))
    max_prompt_length: int = field(default=512, metadata=about("prompt tokens kept (left-truncated)"))
    max_completion_length: int = field(default=64, metadata=about("tokens generated per completion"))
    temperature: float = field(default=1.0, metadata=about("sampling temperature"))
    learning_rate: float = field(default=1e-6, metadata=about("AdamW learning rate (TRL's GRPO default)"))
    beta: float = field(default=0.0, metadata=about("KL coefficient against the reference model"))
    epsilon: float = field(default=0.2, metadata=about("lower clip range of the policy ratio"))
    epsilon_high: float | None = field(
        default=None, metadata=about("upper clip range (default: epsilon; DAPO uses 0.28)")
    )
    loss_type: LossType = field(default="dapo", metadata=about("loss normalization"))
    scale_rewards: ScaleRewards = field(default="group", metadata=about("advantage scaling"))
    lora: LoraSettings | None = field(
        default=None,
        metadata=about(
            "train a LoRA adapter of this rank (0: full fine-tune)",
            flag="--lora-r",
            type=int,
            convert=lora_of_rank,
        ),
    )
    liger_loss: bool = field(default=False, metadata=about("use Liger's chunked GRPO loss"))
    chunked_logps: bool = field(default=True, metadata=about("score completion tokens in tiles of logits"))
    logps_token_chunk: int = field(default=1024, metadata=about("tokens per log-prob tile"))
    logps_vocab_chunk: int = field(default=8192, metadata=about("vocabulary entries per log-prob tile"))
    gradient_checkpointing: bool = field(
        default=True, metadata=about("recompute layer activations in backward")
    )
    offload_activations: bool = field(
        default=True, metadata=about("keep activations saved for backward in CPU memory (GPU only)")
    )
    max_steps: int = field(default=100, metadata=about("GRPO optimizer steps"))
    warm_start_steps: int = field(default=0, metadata=about("supervised steps on reference answers first"))
    warm_start_learning_rate: float = field(default=3e-3, metadata=about("learning rate of the warm start"))
    warm_start_tool_fraction: float = field(
        default=1.0,
        metadata=about("tool env: share of warm-start episodes that call the tools (the rest answer directly)"),
    )
    seed: int = field(default=0, metadata=about("seed of data order, sampling and the tiny model"))
    output_dir: str | None = field(default=None, metadata=about("run folder (default: runs/ENV)"))
    logging_steps: int = field(default=1, metadata=about("log metrics every N steps"))
    save_steps: int = field(default=25, metadata=about("save a checkpoint every N steps"))
    keep_checkpoints: int = field(
        default=2, metadata=about("checkpoints kept on disk beside final/ (0: all)")
    )
    report_to: tuple[str, ...] = field(
        default=(),
        metadata=about(
            "trackers to log to (tensorboard needs rlvr-gym[tensorboard], wandb rlvr-gym[wandb])",
            choices=(*TRACKERS, "none"),
        ),
    )
    verify_timeout_s: float = field(default=60.0, metadata=about("wall-clock budget of one batch's scoring"))
    verbose: bool = field(
        default=False, metadata=about("print the raw per-step log dict and the libraries' own bars")
    )
    rollout_log_steps: int = field(
        default=10,
        metadata=about("every N steps, append one group's rollouts to OUTPUT_DIR/rollouts.jsonl (0: off)"),
    )
    scoring: Scoring = field(
        default="local",
        metadata=about("where completions are scored: this host, or Ray actors on a cluster's CPU nodes"),
    )
    ray_address: str | None = field(
        default=None,
        metadata=about(
            "--scoring ray: the cluster's head (default: RAY_ADDRESS or the cluster `ray start` left here)",
            metavar="HOST:PORT",
        ),
    )
    audit: bool = field(
        default=True,
        metadata=about("run the fast reward-hack audit before training (--no-audit skips it)"),
    )
    audit_skip: tuple[str, ...] = field(
        default=(),
        metadata=about(
            "audit families to leave out, e.g. near_miss (one family, not the whole audit)",
            metavar="FAMILY",
        ),
    )

    def __post_init__(self) -> None:
        if not isinstance(self.env_kwargs, dict):
            from rlvr_gym.envs.config import EnvConfig  # only then: a plain config loads no env

            if isinstance(self.env_kwargs, EnvConfig):  # the env's typed config: the knobs it sets
                object.__setattr__(self, "env_kwargs", self.env_kwargs.changed())
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
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
        if self.num_generations < 2:
            raise InvalidArgumentError(
                f"num_generations must be >= 2 (GRPO compares completions in a group), got {self.num_generations}"
            )
        if (
            isinstance(self.keep_checkpoints, bool)
            or not isinstance(self.keep_checkpoints, int)
            or self.keep_checkpoints < 0
        ):
            raise InvalidArgumentError(
                f"keep_checkpoints must be an integer >= 0 (0: keep all), got {self.keep_checkpoints!r}"
            )
        if self.warm_start_steps < 0:
            raise InvalidArgumentError(f"warm_start_steps must be >= 0, got {self.warm_start_steps}")
        fraction = self.warm_start_tool_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 <= fraction <= 1:
            raise InvalidArgumentError(f"warm_start_tool_fraction must lie in [0, 1], got {fraction!r}")
        for name in ("learning_rate", "temperature", "warm_start_learning_rate", "verify_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise InvalidArgumentError(f"{name} must be a finite number > 0, got {value!r}")
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise InvalidArgumentError(f"beta (KL coefficient) must be >= 0, got {self.beta}")
        if not 0 < self.epsilon < 1 or (self.epsilon_high is not None and not 0 < self.epsilon_high < 1):
            raise InvalidArgumentError(
                f"epsilon/epsilon_high must lie in (0, 1), got {self.epsilon}/{self.epsilon_high}"
            )
        if self.loss_type not in LossType.__args__:
            raise InvalidArgumentError(f"loss_type must be one of {LossType.__args__}, got {self.loss_type!r}")
        if self.scale_rewards not in ScaleRewards.__args__:
            raise InvalidArgumentError(
                f"scale_rewards must be one of {ScaleRewards.__args__}, got {self.scale_rewards!r}"
            )
        report_to = (self.report_to,) if isinstance(self.report_to, str) else tuple(self.report_to)
        report_to = tuple(dict.fromkeys(t for t in report_to if t != "none"))
        unknown = [t for t in report_to if t not in TRACKERS]
        if unknown:
            raise InvalidArgumentError(
                f"report_to: unknown tracker(s) {unknown}; choose from {list(TRACKERS)} or 'none'"
            )
        object.__setattr__(self, "report_to", report_to)
        if (
            isinstance(self.rollout_log_steps, bool)
            or not isinstance(self.rollout_log_steps, int)
            or self.rollout_log_steps < 0
        ):
            raise InvalidArgumentError(
                f"rollout_log_steps must be an integer >= 0 (0: none), got {self.rollout_log_steps!r}"
            )
        check_scoring(self.scoring, self.ray_address)
        skip = (self.audit_skip,) if isinstance(self.audit_skip, str) else tuple(self.audit_skip)
        object.__setattr__(self, "audit_skip", tuple(dict.fromkeys(skip)))
        if isinstance(self.lora, dict):
            object.__setattr__(self, "lora", LoraSettings(**self.lora))

    @property
    def completions_per_step(self) -> int:
        """Completions generated per optimizer step (prompts × group size)."""
        return self.prompts_per_step * self.num_generations

    def for_env(self, env_id: str) -> RunConfig:
        """This config for a run of ``env_id``: names the env and, unless set, the run folder
        ``runs/<env id>`` — what ``train`` and the backends do before anything is written."""
        output_dir = self.output_dir or f"runs/{env_id.replace('/', '_')}"
        return self.replace(env_id=self.env_id or env_id, output_dir=output_dir)

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, default=list) + "\n")
