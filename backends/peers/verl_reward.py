"""verl's reward function for any env: point verl's custom-reward-function loader at this file.

::

    custom_reward_function.path=$(python -c "import rlvr_gym.backends.peers.verl_reward as m; print(m.__file__)")
    custom_reward_function.name=compute_score          # or compute_score_batch with the batch manager
    +custom_reward_function.reward_kwargs.env_kwargs='{"timeout": 5}'   # the env's knobs (optional)

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info)`` per item:
``data_source`` is the env id (``gsm8k-v0``) and ``ground_truth`` the task's label (see
:mod:`rlvr_gym.backends.task_labels`); :func:`verl_rows` writes both into verl's dataset rows.
The result is a dict — verl takes ``score`` as the reward and logs the other keys — with the
verdict's ``passed`` (as ``acc``) and ``reason``. verl has no "unscored": a label that names
no task is an error raised to verl, never a silent 0.

verl loads this file by path as a module of its own, so it imports only absolute names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlvr_gym.backends.peers import shared_env
from rlvr_gym.backends.task_labels import label_of, task_of
from rlvr_gym.envs import Env
from rlvr_gym.verifiers import Verdict


def _result(verdict: Verdict) -> dict[str, Any]:
    return {"score": verdict.score, "acc": verdict.passed, "reason": str(verdict.reason)}


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    env_kwargs: dict[str, Any] | None = None,
    **_: Any,
) -> dict[str, Any]:
    """Score one response: the env ``data_source`` (with ``env_kwargs``), the task ``ground_truth`` names."""
    env = shared_env(data_source, env_kwargs)
    split = (extra_info or {}).get("split")
    return _result(env.verify(solution_str, task_of(env, ground_truth, split)))


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None],
    *,
    env_kwargs: dict[str, Any] | None = None,
    **_: Any,
) -> list[dict[str, Any]]:
    """verl's batch reward manager form: each env's items go through one ``verify_batch``."""
    results: list[dict[str, Any] | None] = [None] * len(solution_strs)
    for source in dict.fromkeys(data_sources):
        env = shared_env(source, env_kwargs)
        items = [i for i, s in enumerate(data_sources) if s == source]
        tasks = [task_of(env, ground_truths[i], (extra_infos[i] or {}).get("split")) for i in items]
        for i, verdict in zip(items, env.verify_batch([solution_strs[i] for i in items], tasks), strict=True):
            results[i] = _result(verdict)
    return results  # type: ignore[return-value]


def verl_rows(env: Env, split: str = "train", limit: int | None = None) -> list[dict[str, Any]]:
    """Dataset rows in verl's RL format (``data_source``, ``prompt``, ``reward_model``, ``extra_info``),
    for ``pandas.DataFrame(rows).to_parquet(...)``."""
    tasks = env.tasks(split)
    count = len(tasks) if limit is None else min(limit, len(tasks))
    rows = []
    for index in range(count):
        prompt = env.prompt(tasks[index])
        rows.append(
            {
                "data_source": env.id,
                "prompt": prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}],
                "ability": "rlvr_gym",
                "reward_model": {"style": "rule", "ground_truth": label_of(split, index)},
                "extra_info": {"split": split, "index": index},
            }
        )
    return rows


__all__ = ["compute_score", "compute_score_batch", "verl_rows"]
