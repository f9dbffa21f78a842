"""Naming a task across a process boundary: the label a peer's dataset row carries.

A reward server's ``labels``, verl's ``ground_truth``, skyrl-gym's ``reward_spec.ground_truth``
and verifiers' ``info`` all need to say which task a completion answers. The label is one of:

* an index into a split (``7``, with the split given apart),
* ``{"split": "test", "index": 7}`` (what :func:`label_of` writes),
* ``{"task": {...}}``: a whole task row — the caller's own answer key, for data the env does not hold,

or any of these as a JSON string (columnar formats such as parquet store strings). The row a
label names is read from the env (``env.tasks``), so a peer cannot alter the env's answer key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rlvr_gym.envs import Env
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError, OutOfRangeError
from rlvr_gym.verifiers import Task, freeze

MAX_LABEL_CHARS = 1_000_000


def label_of(split: str, index: int) -> dict[str, Any]:
    """The label of task ``index`` of ``split``."""
    return {"split": split, "index": index}


def _parsed(label: Any) -> Any:
    if isinstance(label, str):
        if len(label) > MAX_LABEL_CHARS:
            raise InvalidArgumentError(f"a label string is over {MAX_LABEL_CHARS} characters")
        try:
            return json.loads(label)
        except (ValueError, RecursionError):
            raise InvalidArgumentError(
                "a label string must be JSON (an index, {split, index} or {task})"
            ) from None
    return label


def locate(env: Env, label: Any, split: str | None = None) -> tuple[str, int] | None:
    """Where in ``env`` the task ``label`` names lies: ``(split, index)``, checked against the
    env's splits and sizes; ``None`` for a ``{"task": row}`` label (a row the env does not hold).

    Raises an :class:`rlvr_gym.Error` that says what is wrong with the label.
    """
    label = _parsed(label)
    split = split or env.splits[0]
    if isinstance(label, Mapping) and set(label) == {"task"}:
        if not isinstance(label["task"], Mapping):
            raise InvalidTypeError("'task' must be an object (a task row)")
        return None
    if isinstance(label, Mapping):
        if set(label) - {"split", "index"} or "index" not in label:
            raise InvalidArgumentError("a label is an index, {'split', 'index'}, or {'task': {...}}")
        split, label = label.get("split", split), label["index"]
    if isinstance(label, bool) or not isinstance(label, int):
        raise InvalidTypeError(f"a task index must be an integer, got {type(label).__name__}")
    if not isinstance(split, str):
        raise InvalidTypeError(f"a split must be a string, got {type(split).__name__}")
    size = len(env.tasks(split))
    if not 0 <= label < size:
        raise OutOfRangeError(f"index {label} is out of range for split {split!r} ({size} tasks)")
    return split, label


def task_of(env: Env, label: Any, split: str | None = None) -> Task:
    """The task ``label`` names in ``env`` (``split``: for a bare index; default the first split).

    Raises an :class:`rlvr_gym.Error` that says what is wrong with the label.
    """
    where = locate(env, label, split)
    if where is None:
        return freeze(dict(_parsed(label)["task"]))
    return env.tasks(where[0])[where[1]]


__all__ = ["MAX_LABEL_CHARS", "label_of", "locate", "task_of"]
