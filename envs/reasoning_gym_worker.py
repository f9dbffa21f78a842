"""The process side of the reasoning-gym bridge: reasoning-gym's own ``score_answer``, out of process.

Several of reasoning-gym's scorers parse the model's answer with sympy (``parse_expr``, which
evaluates text) or run searches whose time depends on the answer. So they never run in the
trainer's process: :func:`score` runs in a worker of :mod:`rlvr_gym.verifiers.math.budget`
(a separate process with a memory limit, killed at the call's deadline). Requests are JSON; the
dataset is rebuilt here from its name, config, seed and size, and the entry made by index.

The task rows the env poses are made here too (:func:`row`), not in the trainer's process: several
generators walk sets of sympy symbols or strings (polynomial_multiplication, knight_swap,
word_ladder, ransom_note, isomorphic_strings), whose order follows Python's per-process hash seed.
This process runs with ``PYTHONHASHSEED=0``, and the process-wide ``random`` (which
list_functions draws from) is seeded from the entry's dataset, seed and index before it is made, so
an entry is one pure function of (seed, index) in every run, after any restart of this worker, and
the entry scored is the entry posed.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import random
import sys
from typing import Any

# The worker answers on stdout, one JSON line per request, and reasoning-gym prints (from Python,
# and from C: pycosat's "Error(pQueue.insert)"). So the protocol gets a private copy of fd 1, fd 1
# itself is pointed at stderr, and Python-level prints during a score go to stderr too.
_protocol = os.dup(1)
os.dup2(2, 1)
sys.stdout = os.fdopen(_protocol, "w", buffering=1)

import reasoning_gym  # noqa: E402 - after the stdout switch: its imports may print


@functools.lru_cache(maxsize=16)
def _dataset(name: str, config_json: str, seed: int, size: int) -> Any:
    return reasoning_gym.create_dataset(name, seed=seed, size=size, **json.loads(config_json))


@functools.lru_cache(maxsize=4096)
def _entry(name: str, config_json: str, seed: int, size: int, index: int) -> dict[str, Any]:
    random.seed(f"{name}:{seed}:{index}")  # a text seed is hashed with SHA-512: the same in every process
    return _dataset(name, config_json, seed, size)[index]


def request(op: str, *args: Any) -> Any:
    """The worker's one target: ``op`` is ``"row"`` or ``"score"``, the rest that function's arguments."""
    if op == "row":
        return row(*args)
    if op == "score":
        return score(*args)
    raise ValueError(f"unknown request {op!r}")


def row(name: str, config_json: str, seed: int, size: int, index: int) -> dict[str, str]:
    """Entry ``index``'s question and gold answer (a JSON text where the gold is not a string)."""
    with contextlib.redirect_stdout(sys.stderr):
        entry = _entry(name, config_json, seed, size, index)
    answer = entry["answer"]
    return {
        "question": str(entry["question"]),
        "answer": answer if isinstance(answer, str) else json.dumps(answer, default=str),
    }


def score(name: str, config_json: str, seed: int, size: int, index: int, answer: str | None) -> float:
    """reasoning-gym's ``score_answer(answer, entry)`` for entry ``index``, as a finite float in [0, 1]."""
    with contextlib.redirect_stdout(sys.stderr):
        dataset = _dataset(name, config_json, seed, size)
        value = float(dataset.score_answer(answer, _entry(name, config_json, seed, size, index)))
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0
