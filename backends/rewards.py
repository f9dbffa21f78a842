"""Env verdicts as reward functions: one per rubric component, so trainers log each one.

The batch is verified once (``env.verify_batch``, through a scorer with a wall-clock budget)
and every component's function reads its own score from that one result. A verifier *error*
becomes ``None`` — TRL treats the row as unscorable and gives it no advantage — and is counted
in the metrics; it is never passed off as a reward of 0.

Where the batch is scored is the scorer's business (:mod:`rlvr_gym.backends.scoring`): ``local``
runs it on this host in a worker process (an item that hangs is its own ``timeout``, the rest
re-scored by a fresh worker), ``ray`` on actors across a cluster. Items that miss the batch's
budget come back ``None``: their rewards are ``None`` too (unscored), never 0.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr_gym.backends.rollouts import Rollout, RolloutLog
from rlvr_gym.backends.scoring import Scorer
from rlvr_gym.backends.scoring.local import LocalScorer
from rlvr_gym.envs import Env
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Reason, Rubric, Task, Verdict

logger = logging.getLogger("rlvr_gym.backends")

RewardFunction = Callable[..., list[float | None]]


class EnvRewards:
    """Builds the reward functions and metrics for one env; shared by every backend."""

    def __init__(
        self,
        env: Env,
        *,
        num_generations: int | None,
        timeout_s: float = 60.0,
        env_label: str | None = None,
        rollout_log: str | Path | None = None,
        rollout_every: int = 10,
        rollout_samples: int | None = None,
        scorer: Scorer | None = None,
    ) -> None:
        self.env = env
        self.scorer: Scorer = scorer if scorer is not None else LocalScorer(env)
        self.num_generations = num_generations  # None: read the group size off each batch
        self.timeout_s = timeout_s
        self.env_label = env_label  # rows naming another env (a task_env column) are refused
        # Every ``rollout_every`` steps, one group's rollouts (prompt, completion, verdict) are
        # appended to ``rollout_log`` so the report shows what the policy wrote while training.
        # The file is opened at the first write; a step already in it (a resumed run) is skipped.
        self.rollout_log = Path(rollout_log) if rollout_log is not None else None
        self._rollouts: RolloutLog | None = None
        self.rollout_every = rollout_every
        self.rollout_samples = rollout_samples or num_generations or 4
        self._logged_steps: set[int] = set()
        self.weights = self.weights_of(env)
        self.verify_seconds = 0.0
        self._batch: tuple[Sequence[Any], list[Verdict] | None] | None = None
        self.totals: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._pending: tuple[Sequence[Any], Any] | None = None

    @staticmethod
    def weights_of(env: Env) -> dict[str, float]:
        """Normalized weight per component (a bare verifier is one component, ``reward``)."""
        rubric = env.rubric
        return dict(rubric.normalized_weights) if isinstance(rubric, Rubric) else {"reward": 1.0}

    @property
    def abandoned_pools(self) -> int:
        """Verifier threads abandoned, or worker processes killed, to a hang (``local`` scoring)."""
        return getattr(self.scorer, "abandoned_workers", 0)

    @property
    def names(self) -> list[str]:
        return list(self.weights)

    def functions(self) -> list[RewardFunction]:
        """One TRL-style reward function per component (``__name__`` is the component name)."""
        return [self._component(name) for name in self.names]

    def async_functions(self) -> list[RewardFunction]:
        """The same functions as coroutines: TRL awaits async reward functions together, so the
        batch's verification (a code env's sandbox runs) overlaps every other async reward
        function instead of blocking the trainer's thread; the batch is still verified once."""
        return [self._async_component(name) for name in self.names]

    def _async_component(self, name: str) -> RewardFunction:
        sync = self._component(name)

        async def reward(
            prompts: list, completions: list, task_split: list, task_index: list, **kwargs: Any
        ) -> list:
            with self._lock:
                pending = (
                    self._pending if self._pending is not None and self._pending[0] is completions else None
                )
                if pending is None:
                    future = asyncio.get_running_loop().run_in_executor(
                        None, self.verdicts, completions, task_split, task_index, kwargs.get("log_metric")
                    )
                    self._pending = pending = (completions, future)
            await asyncio.shield(pending[1])
            return sync(prompts, completions, task_split, task_index, **kwargs)  # reads the cached batch

        reward.__name__ = name
        return reward

    def _component(self, name: str) -> RewardFunction:
        def reward(
            prompts: list, completions: list, task_split: list, task_index: list, **kwargs: Any
        ) -> list:
            self._check_env_column(kwargs.get("task_env"))
            self._schedule(kwargs.get("trainer_state"))
            verdicts = self.verdicts(completions, task_split, task_index, kwargs.get("log_metric"))
            self._log_rollouts(
                kwargs.get("trainer_state"), prompts, completions, task_split, task_index, verdicts
            )
            if verdicts is None:
                return [None] * len(completions)
            return [None if v is None or v.reason is Reason.ERROR else self._score(v, name) for v in verdicts]

        reward.__name__ = name
        return reward

    def _schedule(self, state: Any) -> None:
        """Tell an env that schedules difficulty (``env.schedule(trainer_state)``, e.g. arith's
        curriculum) where training is; envs without one ignore it."""
        schedule = getattr(self.env, "schedule", None)
        if state is not None and callable(schedule):
            schedule(state)

    def _check_env_column(self, labels: Sequence[str] | None) -> None:
        """Refuse rows built from another env (or version): their indices point at other tasks."""
        if labels is None or self.env_label is None:
            return
        foreign = sorted({label for label in labels if label != self.env_label})
        if foreign:
            raise InvalidArgumentError(
                f"the batch has rows of {foreign}, but these reward functions score {self.env_label!r}: "
                "build the dataset and the reward functions from the same env"
            )

    def _score(self, verdict: Verdict, name: str) -> float:
        scores = verdict.details.get("scores")
        return float(scores[name]) if isinstance(scores, Mapping) and name in scores else verdict.score

    def verdicts(
        self,
        completions: Sequence[Any],
        splits: Sequence[str],
        indices: Sequence[int],
        log_metric: Any = None,
    ) -> list[Verdict | None] | None:
        """Verdicts for a batch, computed once however many component functions ask for them."""
        if self._batch is not None and self._batch[0] is completions:
            return self._batch[1]
        tasks: list[Task] = [self.env.tasks(s)[int(i)] for s, i in zip(splits, indices, strict=True)]
        started = time.perf_counter()
        scored = self.scorer.score(completions, tasks, timeout_s=self.timeout_s)
        # All unscored: the batch overran its budget (a thread-scored batch is whole or not at all).
        verdicts: list[Verdict | None] | None = None if scored and all(v is None for v in scored) else scored
        elapsed = time.perf_counter() - started
        self.verify_seconds += elapsed
        if log_metric is not None:
            log_metric("verifier/time_s", elapsed)
        self._batch = (completions, verdicts)
        keys = list(zip(splits, map(int, indices), strict=True))
        self._record(verdicts, len(completions), log_metric, self.num_generations or _first_run(keys))
        return verdicts

    def _record(self, verdicts: list[Verdict | None] | None, size: int, log_metric: Any, group: int) -> None:
        """Count reasons and log accuracy, verifier errors/timeouts and advantages for this batch."""
        metrics: dict[str, float] = {}
        if verdicts is None:
            self.totals["batch_timeouts"] += 1
            metrics = {"verifier/batch_timeouts": 1.0, "verifier/errors": float(size)}
        else:
            unscored = sum(v is None for v in verdicts)
            reasons = Counter(v.reason.value for v in verdicts if v is not None)
            self.totals.update(reasons)
            if unscored:  # some items missed the batch's budget (both scorers score item by item)
                self.totals["unscored"] += unscored
                metrics["verifier/unscored"] = float(unscored)
            metrics["accuracy"] = sum(v is not None and v.passed for v in verdicts) / size
            metrics["verifier/errors"] = float(reasons[Reason.ERROR.value] + unscored)
            metrics["verifier/timeouts"] = float(reasons[Reason.TIMEOUT.value])
            for reason in Reason:
                metrics[f"reasons/{reason.value}"] = reasons[reason.value] / size
            metrics.update(self._advantage_stats(verdicts, group))
        if log_metric is not None:
            for key, value in metrics.items():
                log_metric(key, value)

    def _advantage_stats(self, verdicts: list[Verdict | None], g: int) -> dict[str, float]:
        """Group-normalized advantages, as GRPO computes them, for the logs (unscored items as 0)."""
        rewards = [v.score if v is not None else 0.0 for v in verdicts]
        advantages = []
        for start in range(0, len(rewards) - len(rewards) % g, g):
            group = rewards[start : start + g]
            mean = sum(group) / g
            std = math.sqrt(sum((r - mean) ** 2 for r in group) / max(1, g - 1))
            advantages += [(r - mean) / (std + 1e-4) for r in group]
        if not advantages:
            return {}
        mean = sum(advantages) / len(advantages)
        std = math.sqrt(sum((a - mean) ** 2 for a in advantages) / len(advantages))
        return {"advantage/mean": mean, "advantage/std": std}

    def _log_rollouts(
        self,
        state: Any,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        splits: Sequence[str],
        indices: Sequence[int],
        verdicts: list[Verdict | None] | None,
    ) -> None:
        """Append one group of this batch to the rollout log, every ``rollout_every`` steps."""
        step = getattr(state, "global_step", None)
        if self.rollout_log is None or self.rollout_every < 1 or verdicts is None or step is None:
            return
        if step % self.rollout_every or step in self._logged_steps:
            return
        self._logged_steps.add(step)
        if self._rollouts is None:
            self._rollouts = RolloutLog(self.rollout_log, duplicates="skip")
        self._rollouts.extend(
            [
                Rollout(
                    step=step,
                    split=str(splits[i]),
                    index=int(indices[i]),
                    sample=i,
                    prompt=prompts[i] if prompts is not None else None,
                    completion=completions[i],
                    verdict=verdicts[i].to_dict() if verdicts[i] is not None else None,
                )
                for i in range(min(self.rollout_samples, len(verdicts)))
            ]
        )

    def close(self) -> None:
        self.scorer.close()
        if self._rollouts is not None:
            self._rollouts.close()
            self._rollouts = None


def _first_run(keys: Sequence[Any]) -> int:
    """Length of the first run of equal keys: TRL puts a prompt's generations side by side."""
    run = 1
    while run < len(keys) and keys[run] == keys[0]:
        run += 1
    return run
