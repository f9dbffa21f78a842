"""``humaneval``: OpenAI's 164 HumanEval problems, scored by running the tests in the sandbox.

Data: ``data_path`` (a ``HumanEval.jsonl.gz``/``.jsonl`` file), else ``$RLVR_GYM_DATA_DIR/
HumanEval.jsonl.gz``, else the hub (``openai/openai_humaneval``). The test code runs in the judge
with the prompt as trusted setup (so helpers such as ``poly`` come from the task, not from the
model) and every call of the entry point answered by the sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr_gym.envs.code_env import FENCE_INSTRUCTION, CodeEnv, fenced
from rlvr_gym.envs.data import data_dir, load_hub, parse_rows, read_jsonl
from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.verifiers import Task

FILENAME = "HumanEval.jsonl.gz"
HUB_NAME = "openai/openai_humaneval"


def humaneval_tests(row: Mapping[str, Any]) -> dict[str, Any]:
    """The harness spec for one HumanEval row: its ``check`` run on the entry point."""
    entry_point = row["entry_point"]
    return {
        "kind": "assert",
        "setup": row["prompt"],
        "entry_point": entry_point,
        "cases": [f"{row['test']}\n\ncheck({entry_point})\n"],
    }


class HumanEvalBase(CodeEnv):
    """HumanEval's tasks, prompt and rubric without a turn protocol: ``HumanEvalEnv`` adds single-step
    play, a tool env its tools (so that tool env is not a ``SingleTurnEnv``)."""

    splits = ("test",)

    def __init__(self, *, data_path: str | os.PathLike[str] | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.data_path = data_path

    def load_tasks(self, split: str) -> Sequence[Task]:
        path = Path(self.data_path) if self.data_path is not None else None
        if path is None and (folder := data_dir()) is not None:
            path = folder / FILENAME
        rows = read_jsonl(path) if path is not None else load_hub(HUB_NAME, None, "test")
        return parse_rows(
            rows,
            lambda row: {**row, "tests": humaneval_tests(row)},
            required=("prompt", "canonical_solution", "test", "entry_point"),
        )

    def question(self, task: Task) -> str:
        return (
            "Complete this Python function. Keep its name and signature, and include any imports "
            f"and helper functions it uses. {FENCE_INSTRUCTION}\n\n{fenced(task['prompt'])}"
        )

    def reference_completion(self, task: Task) -> str:
        return fenced(task["prompt"] + task["canonical_solution"])

    def wrong_completions(self, task: Task) -> list[str]:
        signature_only = task["prompt"] + "    return None\n"
        return [*super().wrong_completions(task), fenced(signature_only)]


class HumanEvalEnv(HumanEvalBase, SingleTurnEnv):
    """HumanEval: complete a Python function from its signature and docstring (164 tasks, test split)."""
