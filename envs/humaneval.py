"""``humaneval``: OpenAI's 164 HumanEval problems, scored by running the tests in the sandbox.

Data: ``data_path`` (a ``HumanEval.jsonl.gz``/``.jsonl`` file), else ``$RLVR_GYM_DATA_DIR/
HumanEval.jsonl.gz``, else the hub (``openai/openai_humaneval``). The test code runs in the judge
with the prompt as trusted setup (so helpers such as ``poly`` come from the task, not from the
model) and every call of the entry point answered by the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rlvr_gym.envs.code_env import FENCE_INSTRUCTION, CodeConfig, CodeEnv, fenced
from rlvr_gym.envs.config import knob
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


@dataclass(frozen=True)
class HumanEvalConfig(CodeConfig):
    """``humaneval``'s knobs: the code env's, and where the data is."""

    data_path: Path | None = knob(None, f"a copy of {FILENAME} (none: $RLVR_GYM_DATA_DIR, else the hub)")


class HumanEvalBase(CodeEnv):
    """HumanEval's tasks, prompt and rubric without a turn protocol: ``HumanEvalEnv`` adds single-step
    play, a tool env its tools (so that tool env is not a ``SingleTurnEnv``)."""

    splits = ("test",)
    config_class: ClassVar[type[HumanEvalConfig]] = HumanEvalConfig
    env_config: HumanEvalConfig

    def __init__(self, config: HumanEvalConfig | None = None, /, **knobs: Any) -> None:
        super().__init__(config, **knobs)
        self.data_path = self.env_config.data_path

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
