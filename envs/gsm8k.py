"""``gsm8k``: grade-school math word problems (openai/gsm8k) with integer answers.

Data: the hub's ``openai/gsm8k`` (config ``main``) by default; a JSONL file or a folder with
``gsm8k_train.jsonl`` / ``gsm8k_test.jsonl`` (``data_path=...`` or ``$RLVR_GYM_DATA_DIR``)
overrides it. The rubric scores correctness (``MathVerifier``, in-process for numbers) and the
``<think>…</think><answer>…</answer>`` format separately; both appear in the verdict's details.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rlvr_gym.envs.config import EnvConfig, configure, knob
from rlvr_gym.envs.data import load_rows, parse_rows
from rlvr_gym.envs.env import Env, SingleTurnEnv
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Rubric, SingleAnswer, Task
from rlvr_gym.verifiers.format import TagFormat
from rlvr_gym.verifiers.math import MathVerifier, fast_number, normalize

SYSTEM_PROMPT = (
    "Solve the math word problem. Reason step by step inside <think></think>, then give only the "
    "final answer, a number, inside <answer></answer>. For example: "
    "<think>3 + 4 = 7</think><answer>7</answer>"
)
_CALCULATOR = re.compile(r"<<[^<>]*>>")


def parse_row(row: dict[str, Any]) -> dict[str, Any]:
    """A GSM8K row as a task: the question, the final number, and the worked solution."""
    solution, marker, final = str(row["answer"]).rpartition("####")
    if not marker:
        raise InvalidArgumentError(f"GSM8K row has no '#### answer' line: {row['answer']!r:.80}")
    return {
        "question": str(row["question"]),
        "answer": final.strip().replace(",", ""),
        "solution": _CALCULATOR.sub("", solution).strip(),
    }


@dataclass(frozen=True)
class GSM8KConfig(EnvConfig):
    """``gsm8k``'s knobs: where the data is, and how strictly answers are read."""

    data_path: Path | None = knob(
        None, "a JSONL file or a folder of gsm8k_{train,test}.jsonl (none: the hub)"
    )
    format_weight: float = knob(0.2, "weight of the <think>/<answer> format component")
    last_number_fallback: bool = knob(False, "without an answer tag, read the last number")
    timeout: float = knob(3.0, "seconds the math verifier may spend per answer")
    strict_answer: bool = knob(False, "read only an explicit answer (<answer>, \\boxed{}, ####)")


class GSM8KBase(Env):
    """GSM8K's tasks, prompt and rubric without a turn protocol: ``GSM8KEnv`` adds single-step
    play, a tool env its tools (so that tool env is not a ``SingleTurnEnv``)."""

    default_system_prompt = SYSTEM_PROMPT
    config_class: ClassVar[type[GSM8KConfig]] = GSM8KConfig

    def __init__(self, config: GSM8KConfig | None = None, /, **knobs: Any) -> None:
        config = configure(self, config, knobs)
        super().__init__(**config.env_options())
        self.data_path = config.data_path
        self.rubric = Rubric(
            {
                "correct": SingleAnswer(
                    MathVerifier(
                        last_number_fallback=config.last_number_fallback,
                        timeout=config.timeout,
                        strict=config.strict_answer,
                        question_key="question",
                    )
                ),
                "format": TagFormat(),
            },
            weights={"format": config.format_weight},
            passed_by="correct",
        )

    def load_tasks(self, split: str) -> Sequence[Task]:
        rows = load_rows(self.data_path, prefix="gsm8k", split=split, hub=("openai/gsm8k", "main"))
        return parse_rows(rows, parse_row, required=("question", "answer"))

    def question(self, task: Task) -> str:
        return task["question"]

    def reference_completion(self, task: Task) -> str:
        return f"<think>{task['solution']}</think>\n<answer>{task['answer']}</answer>"

    def wrong_completions(self, task: Task) -> list[str]:
        value = fast_number(normalize(task["answer"]))
        gold = task["answer"] if value is None else (int(value) if value.denominator == 1 else float(value))
        near_miss = f"{gold}+1" if value is None else str(gold + 1)
        return [
            *super().wrong_completions(task),
            f"<think>{task['solution']}</think>\n<answer>{near_miss}</answer>",
            f"<think>close</think><answer>{gold} or {near_miss}</answer>",
            f"<think>{task['solution']}</think>",
        ]


class GSM8KEnv(GSM8KBase, SingleTurnEnv):
    """Grade-school math word problems (GSM8K); integer answers, <think>/<answer> format."""
