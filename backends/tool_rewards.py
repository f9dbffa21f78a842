"""A tool env's episodes as TRL reward functions, under ``GRPOTrainer(environment_factory=...)``.

TRL plays the tool loop with the classes of :func:`~rlvr_gym.backends.tool_bridge.environment_factory`
and hands every reward function the rollouts (their messages) and their ``environments``.
:class:`EpisodeRewards` ends each episode with its final message (TRL never shows that message
to the env, so without this a plain final answer — what ``env.step`` scores — would score 0),
refuses a batch whose GRPO groups were posed different tasks, logs the tool metrics (calls and
tool errors per episode, turns, truncations) through TRL's ``log_metric``, writes each sampled
rollout's turns to the rollout log, and returns the episode scores: ``None`` where our side
failed (the sandbox, a verifier), which TRL leaves unscored, never 0.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from rlvr_gym.backends.rewards import RewardFunction
from rlvr_gym.backends.rollouts import Rollout, RolloutLog, episode_turns
from rlvr_gym.envs import MultiTurnEnv
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError
from rlvr_gym.verifiers import Reason, Verdict

logger = logging.getLogger("rlvr_gym.backends")

REWARD_NAME = "episode"
"""The reward function's name: TRL logs it as ``rewards/episode/mean``."""


def check_one_task_per_group(posed: Sequence[Hashable], group_size: int) -> None:
    """Refuse a batch in which one GRPO group (``group_size`` consecutive rollouts, as TRL lays
    them out) was posed more than one task: its advantages would compare answers to different
    questions."""
    if group_size < 1:
        raise InvalidArgumentError(f"group_size must be >= 1, got {group_size}")
    for start in range(0, len(posed), group_size):
        tasks = set(posed[start : start + group_size])
        if len(tasks) > 1:
            raise InvalidArgumentError(
                f"GRPO group {start // group_size} was posed {len(tasks)} different tasks {sorted(map(str, tasks))}: "
                "group-relative advantages would compare answers to different questions. Give the trainer "
                "train_dataset=rlvr_gym.backends.trl_adapter.dataset(env) so each group shares its row's task"
            )


class EpisodeRewards:
    """The reward function of a tool env under TRL's tool loop, and its metrics and rollout log.

    ``num_generations`` is the GRPO group size, for the one-task-per-group check (``None``: each
    rollout is checked against its own row's ``task_split``/``task_index``, which TRL repeats
    across a group). ``rollout_log``/``rollout_every``/``rollout_samples`` as in
    :class:`~rlvr_gym.backends.rewards.EnvRewards`.
    """

    def __init__(
        self,
        env: MultiTurnEnv,
        *,
        num_generations: int | None = None,
        rollout_log: str | Path | None = None,
        rollout_every: int = 10,
        rollout_samples: int | None = None,
    ) -> None:
        if not isinstance(env, MultiTurnEnv):
            raise InvalidTypeError(f"EpisodeRewards needs a tool env (envs.MultiTurnEnv), got {type(env).__name__}")
        self.env = env
        self.num_generations = num_generations
        self.rollout_log = Path(rollout_log) if rollout_log is not None else None
        self.rollout_every = rollout_every
        self.rollout_samples = rollout_samples or num_generations or 4
        self._rollouts: RolloutLog | None = None
        self._logged_steps: set[int] = set()
        self.totals: Counter[str] = Counter()
        self.verify_seconds = 0.0  # verification happens inside the episodes (MetricsWriter asks)
        self.weights = {REWARD_NAME: 1.0}  # the trl backend's reward_weights

    @property
    def names(self) -> list[str]:
        return list(self.weights)

    def functions(self) -> list[RewardFunction]:
        """The one reward function, for ``GRPOTrainer(reward_funcs=...)``."""
        return [self.reward]

    def reward(
        self,
        prompts: list,
        completions: list,
        environments: list | None = None,
        task_split: list | None = None,
        task_index: list | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        """End every rollout's episode, check its task, log metrics; the episode scores."""
        if environments is None:
            raise InvalidArgumentError(
                f"{self.env.id} is a tool env: its reward needs TRL's tool loop, "
                "GRPOTrainer(environment_factory=environment_factory(env), reward_funcs=reward_funcs(env), ...)"
            )
        verdicts = [rollout._end(completion) for rollout, completion in zip(environments, completions, strict=True)]
        posed = [rollout._posed() for rollout in environments]
        if task_split is not None and task_index is not None:
            for i, (split, index) in enumerate(zip(task_split, task_index, strict=True)):
                if posed[i] != (str(split), int(index)):
                    raise InvalidArgumentError(
                        f"rollout {i} was posed task {posed[i]} but its row is ({split!r}, {index}): the rollout "
                        "would be scored against another question"
                    )
        if self.num_generations:
            check_one_task_per_group(posed, self.num_generations)
        self._record(environments, verdicts, kwargs.get("log_metric"))
        self._log_rollouts(kwargs.get("trainer_state"), prompts, completions, environments, posed, verdicts)
        return [None if v.reason is Reason.ERROR else float(v.score) for v in verdicts]

    reward.__name__ = REWARD_NAME  # type: ignore[attr-defined]

    def _record(self, environments: list, verdicts: list[Verdict], log_metric: Any) -> None:
        """Accuracy, reasons, verifier errors, and the tool metrics of this batch."""
        size = len(verdicts)
        reasons = Counter(v.reason.value for v in verdicts)
        self.totals.update(reasons)
        calls = errors = turns = truncated = 0
        for rollout in environments:
            for turn in rollout.env._turns:
                records = turn.get("tool_calls", [])
                calls += len(records)
                errors += sum(not record.get("ok", True) for record in records)
            turns += len(rollout.env._turns)
            truncated += rollout.env.out_of_turns_ended
        self.totals.update(tool_calls=calls, tool_errors=errors, turns=turns, truncated=truncated, episodes=size)
        metrics = {
            "accuracy": sum(v.passed for v in verdicts) / size,
            "verifier/errors": float(reasons[Reason.ERROR.value]),
            "verifier/timeouts": float(reasons[Reason.TIMEOUT.value]),
            "tools/calls_per_episode": calls / size,
            "tools/errors_per_episode": errors / size,
            "episode/turns": turns / size,
            "episode/truncated": truncated / size,
            **{f"reasons/{reason.value}": reasons[reason.value] / size for reason in Reason},
        }
        if log_metric is not None:
            for key, value in metrics.items():
                log_metric(key, value)

    def _log_rollouts(
        self,
        state: Any,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        environments: list,
        posed: list[tuple[str, int] | None],
        verdicts: list[Verdict],
    ) -> None:
        """Every ``rollout_every`` steps, the first group's episodes, turn by turn."""
        step = getattr(state, "global_step", None)
        if self.rollout_log is None or self.rollout_every < 1 or step is None:
            return
        if step % self.rollout_every or step in self._logged_steps:
            return
        self._logged_steps.add(step)
        if self._rollouts is None:
            self._rollouts = RolloutLog(self.rollout_log, duplicates="skip")
        rows = []
        for i in range(min(self.rollout_samples, len(verdicts))):
            split, index = posed[i] or ("?", -1)
            rows.append(
                Rollout(
                    step=step,
                    split=split,
                    index=index,
                    sample=i,
                    prompt=prompts[i],
                    completion=completions[i],
                    verdict=verdicts[i].to_dict(),
                    turns=episode_turns(environments[i].env),
                )
            )
        self._rollouts.extend(rows)

    def close(self) -> None:
        if self._rollouts is not None:
            self._rollouts.close()
            self._rollouts = None
