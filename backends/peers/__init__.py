"""Our envs inside other frameworks' loops, each adapter written against the peer's own API.

* :mod:`.verl_reward` — verl's ``compute_score(data_source, solution_str, ground_truth, extra_info)``,
  loaded by verl's custom-reward-function loader (a file path and a function name);
* :mod:`.skyrl_env` — a skyrl-gym ``BaseTextEnv`` (registered as ``rlvr_gym`` in skyrl-gym);
* :mod:`.verifiers_env` — a PrimeIntellect ``verifiers`` 0.4 Environment from ``load_environment``.

All three name a task by a label (:mod:`rlvr_gym.backends.task_labels`) and score through the
env's own rubric, so verdicts are the ones our trainers, eval and audit see. Each peer package
is imported only by its adapter.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rlvr_gym import envs
from rlvr_gym.envs import Env


@functools.lru_cache(maxsize=32)
def _cached(env_id: str, knobs_json: str) -> Env:
    return envs.make(env_id, **json.loads(knobs_json))


def plain(value: Any) -> Any:
    """Mappings and sequences as dicts and lists, all the way down: peers hand settings over in
    their own containers (verl: OmegaConf's ``DictConfig``), which JSON and our envs do not take."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(item) for item in value]
    return value


def shared_env(env_id: str, knobs: Mapping[str, Any] | None = None) -> Env:
    """One env per (id, settings) per process: a peer calls the reward once per item, and an env
    (its tasks, its sandbox pool) is too costly to build per call. Used for scoring only, never
    stepped (a tool env's episodes run on its ``spawn()``), so sharing it is safe."""
    return _cached(env_id, json.dumps(plain(knobs or {}), sort_keys=True))


__all__ = ["plain", "shared_env"]
