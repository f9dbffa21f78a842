"""Envs from your own data by column mapping, no class to write: ``math`` and ``code``.

>>> env = envs.make("math", data="my.jsonl", question="problem", answer="answer")  # doctest: +SKIP

``data`` is a JSONL, JSON, CSV or Parquet file, or a hub id (``org/name``, through ``datasets``,
with ``split`` and ``config``); the env has the one split ``split``. The keyword arguments name
the columns. Every row is checked when the split loads, so a bad row is a
:class:`~rlvr_gym.envs.data.BadDataRowError` naming ``file:line`` and the missing key, not a crash in
the middle of training. ``instructions`` (IFEval-style ids and kwargs) lives in
:mod:`rlvr_gym.envs.instructions`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rlvr_gym.envs.code_env import CodeEnv, code_question, fenced
from rlvr_gym.envs.data import DataUnavailableError, parse_rows
from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.envs.math500 import BoxedFormat, distinct_answers
from rlvr_gym.envs.tables import read_table
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError
from rlvr_gym.verifiers import Rubric, SingleAnswer, Task
from rlvr_gym.verifiers.code.harness import validate_tests
from rlvr_gym.verifiers.math import MathVerifier

MATH_SYSTEM_PROMPT = (
    "Solve the problem. Reason step by step, then write the final answer, simplified, inside "
    "\\boxed{} at the end."
)
CODE_KINDS = ("assert", "calls", "stdio")


def _name(value: object, what: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidTypeError(f"{what} must name a column (a non-empty string), got {value!r}")
    return value


def _text(row: Mapping[str, Any], column: str) -> str:
    value = row[column]
    if isinstance(value, bool) or not isinstance(value, str | int | float) or not str(value).strip():
        raise InvalidArgumentError(f"column {column!r} must be non-empty text, got {value!r:.80}")
    return str(value).strip()


def _list(value: Any, column: str) -> list[Any]:
    """A list column; a CSV cell holding a JSON list is read as one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise InvalidArgumentError(
                f"column {column!r} must be a list (or a JSON list), got {value!r:.80}"
            ) from None
    if isinstance(value, Mapping) or not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise InvalidArgumentError(f"column {column!r} must be a non-empty list, got {value!r:.80}")
    return list(value)


class DataEnv(SingleTurnEnv):
    """Shared part: rows from ``data`` (:func:`~rlvr_gym.envs.tables.read_table`), one split."""

    splits: ClassVar[tuple[str, ...]] = ("train",)

    def __init__(
        self,
        *,
        data: str | os.PathLike[str] | None,
        split: str = "train",
        config: str | None = None,
        **env_options: Any,
    ) -> None:
        if data is None:
            raise DataUnavailableError(
                f"{type(self).__name__} poses your data: pass data=<a .jsonl/.json/.csv/.parquet file or a hub "
                "id 'org/name'> and the column names (see docs/authoring-envs.md)"
            )
        if not isinstance(data, str | os.PathLike) or not str(data):
            raise InvalidTypeError(f"data must be a file path or a hub id ('org/name'), got {data!r}")
        if not isinstance(split, str) or not split:
            raise InvalidTypeError(f"split must be a non-empty string, got {split!r}")
        self.splits = (split,)
        super().__init__(**env_options)
        self.data, self.config = data, config

    def row_to_task(self, row: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    required: tuple[str, ...] = ()

    def load_tasks(self, split: str) -> Sequence[Task]:
        rows = read_table(self.data, split=split, config=self.config)
        return parse_rows(rows, self.row_to_task, required=self.required)


class MathDataEnv(DataEnv):
    """Math problems from a dataset: ``question`` and ``answer`` columns, answers compared with
    :class:`MathVerifier` (a GSM8K-style ``... #### 42`` answer column gives ``42``)."""

    default_system_prompt = MATH_SYSTEM_PROMPT

    def __init__(
        self,
        *,
        data: str | os.PathLike[str] | None = None,
        question: str = "question",
        answer: str = "answer",
        solution: str | None = None,
        split: str = "train",
        config: str | None = None,
        format_weight: float = 0.1,
        timeout: float = 3.0,
        strict_answer: bool = False,
        **env_options: Any,
    ) -> None:
        super().__init__(data=data, split=split, config=config, **env_options)
        self.columns = {
            "question": _name(question, "question"),
            "answer": _name(answer, "answer"),
            "solution": _name(solution, "solution", optional=True),
        }
        self.required = (self.columns["question"], self.columns["answer"])
        self.rubric = Rubric(
            {
                "correct": SingleAnswer(
                    MathVerifier(
                        timeout=timeout, strict=strict_answer, last_math_fallback=True, question_key="question"
                    )
                ),
                "format": BoxedFormat(),
            },
            weights={"format": format_weight},
            passed_by="correct",
        )

    def row_to_task(self, row: Mapping[str, Any]) -> dict[str, Any]:
        c = self.columns
        answer = _text(row, c["answer"])
        if "####" in answer:
            answer = answer.rpartition("####")[2].strip().replace(",", "")
            if not answer:
                raise InvalidArgumentError(f"column {c['answer']!r} has nothing after '####'")
        task = {"question": _text(row, c["question"]), "answer": answer}
        if c["solution"]:
            task["solution"] = _text(row, c["solution"])
        return task

    def question(self, task: Task) -> str:
        return task["question"]

    def reference_completion(self, task: Task) -> str:
        return f"{task.get('solution', '')}\n\nFinal answer: \\boxed{{{task['answer']}}}".lstrip()

    def wrong_completions(self, task: Task) -> list[str]:
        """Another row's (different) answer, and a hedge between the gold answer and it."""
        tasks = self.tasks(self.splits[0])
        other = next((t["answer"] for t in tasks if distinct_answers(t["answer"], task["answer"])), None)
        hedges = (
            []
            if other is None
            else [f"\\boxed{{{other}}}", f"\\boxed{{{task['answer']} \\text{{ or }} {other}}}"]
        )
        return [*super().wrong_completions(task), *hedges, "\\boxed{}"]


class CodeDataEnv(DataEnv, CodeEnv):
    """Coding tasks from a dataset: a ``prompt`` column and a ``tests`` column of one harness kind —
    ``assert`` (test code strings), ``calls`` (``{"args": [...], "expected": ...}`` per case, the
    function named by ``entry_point``) or ``stdio`` (``{"stdin": ..., "stdout": ...}`` per case)."""

    def __init__(
        self,
        *,
        data: str | os.PathLike[str] | None = None,
        prompt: str = "prompt",
        tests: str = "tests",
        kind: str = "assert",
        entry_point: str | None = None,
        setup: str | None = None,
        solution: str | None = None,
        split: str = "train",
        config: str | None = None,
        **env_options: Any,
    ) -> None:
        if kind not in CODE_KINDS:
            raise InvalidArgumentError(f"kind must be one of {CODE_KINDS}, got {kind!r}")
        super().__init__(data=data, split=split, config=config, **env_options)
        self.kind = kind
        self.columns = {
            "prompt": _name(prompt, "prompt"),
            "tests": _name(tests, "tests"),
            "entry_point": _name(entry_point, "entry_point", optional=True),
            "setup": _name(setup, "setup", optional=True),
            "solution": _name(solution, "solution", optional=True),
        }
        if kind == "calls" and entry_point is None:
            raise InvalidArgumentError("kind='calls' needs entry_point=<the column naming the function>")
        self.required = tuple(c for c in self.columns.values() if c)

    def row_to_task(self, row: Mapping[str, Any]) -> dict[str, Any]:
        c = self.columns
        spec: dict[str, Any] = {"kind": self.kind, "cases": _list(row[c["tests"]], c["tests"])}
        if c["entry_point"]:
            name = _text(row, c["entry_point"])
            spec["fn" if self.kind == "calls" else "entry_point"] = name
        if c["setup"] and row[c["setup"]]:
            spec["setup"] = str(row[c["setup"]])
        if self.kind == "calls" and not all(
            isinstance(case, Mapping) and "expected" in case for case in spec["cases"]
        ):
            raise InvalidArgumentError(
                f"column {c['tests']!r}: each 'calls' case is {{'args': [...], 'expected': ...}}"
            )
        task = {"prompt": _text(row, c["prompt"]), "tests": dict(validate_tests(spec))}
        if c["solution"]:
            task["solution"] = _text(row, c["solution"])
        return task

    def question(self, task: Task) -> str:
        return code_question(task["prompt"], task["tests"])

    def reference_completion(self, task: Task) -> str:
        if "solution" not in task:
            raise NotImplementedError("no solution column: pass solution=<column> for check_env's oracle")
        return fenced(task["solution"])


__all__ = ["CodeDataEnv", "DataEnv", "MathDataEnv"]
