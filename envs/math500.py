"""``math500``: the MATH-500 competition problems, answers in ``\\boxed{}``, checked symbolically.

Data: the hub's ``HuggingFaceH4/MATH-500`` (split ``test``) by default; a JSONL file or a folder
with ``math500_test.jsonl`` (``data_path=...`` or ``$RLVR_GYM_DATA_DIR``) overrides it.
The rubric scores correctness (``MathVerifier``: sympy in a budgeted worker) and the format
(one final ``\\boxed{}``) separately.
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
from rlvr_gym.verifiers import Reason, Rubric, SingleAnswer, Task, Verdict
from rlvr_gym.verifiers.math import MathVerifier, fast_number, find_boxed, normalize

SYSTEM_PROMPT = (
    "Solve the math problem. Reason step by step, then write the final answer, simplified, "
    "inside \\boxed{} at the end, e.g. \\boxed{\\frac{3}{4}}."
)


def distinct_answers(first: str, second: str) -> bool:
    """Cheaply, certainly different answers (for picking a wrong answer from another problem).

    Different normalized strings, also after dropping an ``x=`` prefix, and not the same number.
    """
    a, b = (re.sub(r"^[a-zA-Z]=", "", normalize(s)) for s in (first, second))
    if a == b:
        return False
    x, y = fast_number(a), fast_number(b)
    return x is None or y is None or x != y


class BoxedFormat:
    """The completion ends its reasoning with one final ``\\boxed{...}`` with balanced braces."""

    def __call__(self, completion: str, task: Task) -> Verdict:
        boxed = find_boxed(completion)
        if boxed is None or not boxed.strip():
            return Verdict.fail(Reason.BAD_FORMAT, why="no balanced \\boxed{...}")
        return Verdict.correct(boxed)

    def __repr__(self) -> str:
        return "BoxedFormat()"


@dataclass(frozen=True)
class MATH500Config(EnvConfig):
    """``math500``'s knobs: where the data is, and how strictly answers are read."""

    data_path: Path | None = knob(None, "a JSONL file or a folder of math500_test.jsonl (none: the hub)")
    format_weight: float = knob(0.1, "weight of the \\boxed{} format component")
    timeout: float = knob(3.0, "seconds the math verifier (sympy, in a worker) may spend per answer")
    strict_answer: bool = knob(False, "read only an explicit answer (<answer>, \\boxed{}, ####)")
    last_math_fallback: bool = knob(True, "without a container, read the last math expression")


class MATH500Base(Env):
    """MATH-500's tasks, prompt and rubric without a turn protocol: ``MATH500Env`` adds single-step
    play, a tool env its tools (so that tool env is not a ``SingleTurnEnv``)."""

    splits: ClassVar[tuple[str, ...]] = ("test",)
    default_system_prompt = SYSTEM_PROMPT
    config_class: ClassVar[type[MATH500Config]] = MATH500Config

    def __init__(self, config: MATH500Config | None = None, /, **knobs: Any) -> None:
        config = configure(self, config, knobs)
        super().__init__(**config.env_options())
        self.data_path = config.data_path
        self.rubric = Rubric(
            {
                "correct": SingleAnswer(
                    MathVerifier(
                        timeout=config.timeout,
                        strict=config.strict_answer,
                        last_math_fallback=config.last_math_fallback,
                        question_key="problem",
                    )
                ),
                "format": BoxedFormat(),
            },
            weights={"format": config.format_weight},
            passed_by="correct",
        )

    def load_tasks(self, split: str) -> Sequence[Task]:
        rows = load_rows(self.data_path, prefix="math500", split=split, hub=("HuggingFaceH4/MATH-500", None))
        keep = ("problem", "solution", "answer", "subject", "level", "unique_id")
        return parse_rows(
            rows, lambda row: {key: row[key] for key in keep if key in row}, required=("problem", "answer")
        )

    def question(self, task: Task) -> str:
        return task["problem"]

    def reference_completion(self, task: Task) -> str:
        return f"{task['solution']}\n\nFinal answer: \\boxed{{{task['answer']}}}"

    def wrong_completions(self, task: Task) -> list[str]:
        """Another problem's (different) answer, and a hedge between the gold answer and it."""
        tasks = self.tasks("test")
        start = next((i for i, t in enumerate(tasks) if t is task), 0)
        other = next(
            t["answer"]
            for t in (*tasks[start + 1 :], *tasks[:start])
            if distinct_answers(t["answer"], task["answer"])
        )
        return [
            *super().wrong_completions(task),
            f"The answer is \\boxed{{{other}}}",
            f"\\boxed{{{task['answer']} \\text{{ or }} {other}}}",
            "\\boxed{}",
        ]


class MATH500Env(MATH500Base, SingleTurnEnv):
    """MATH-500 competition problems; symbolic answers in \\boxed{}, compared with sympy under a budget."""
