"""What rlvr-gym's path costs on top of plain TRL: the same tiny-model GRPO run both ways.

* single-step: ``arith`` through ``reward_funcs(env)`` + ``dataset(env)`` (verdicts through the
  scorer, per-component functions, metrics, locators) vs a hand-written TRL reward function (a
  regex and an ``int`` compare) on the same prompts;
* tool env: :class:`CalculatorEnv` (below: ``a + b`` with a ``calculate`` tool) through ``environment_factory(env)`` +
  ``dataset(env)`` + ``reward_funcs(env)`` vs a hand-written ``environment_factory`` class (a
  ``calculate`` method, ``reset(**row)`` keeping the answer, a reward reading the last message).

Both arms share the model, the prompts, the seed and every ``GRPOConfig`` field; they alternate
for ``--rounds`` rounds and the median steps/s of each is reported with the ratio (>1: ours
slower). The models are the untrained tiny ones: the runs measure the machinery (rewards, reset,
episode bookkeeping) around the same generation work. A tiny model warm-started on reference
episodes did not yet write valid tool calls here (200 steps: 1 call in 64 episodes), so the tool
arm's rollouts rarely reach a tool; each call would cost both arms the same ``calculate``.

    RLVR_GYM_DATA_DIR=/path/to/data python bench/overhead.py [--steps 20] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from rlvr_gym import envs
from rlvr_gym.backends.trl_adapter import dataset, environment_factory, reward_funcs, reward_weights
from rlvr_gym.envs import MultiTurnEnv, tool
from rlvr_gym.envs.arith import ArithBase
from rlvr_gym.trainers.tiny_model import build_tiny_model

ANSWER = re.compile(r"<answer>\s*(-?\d+)\s*</answer>")

MAX_DIGITS = 12


def calculate_expression(expression: str) -> int:
    """The value of ``expression``: integers joined by ``+``, ``-``, ``*`` and parentheses,
    evaluated over its syntax tree (never ``eval``); anything else is a ``ValueError``."""
    if len(expression) > 200:
        raise ValueError("the expression is too long")
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, RecursionError):
        raise ValueError("not an arithmetic expression") from None

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
            left, right = value(node.left), value(node.right)
            result = left + right if isinstance(node.op, ast.Add) else left - right if isinstance(node.op, ast.Sub) else left * right
            if len(str(abs(result))) > MAX_DIGITS:
                raise ValueError("the result is too large")
            return result
        raise ValueError("only integers, +, -, * and parentheses")

    return value(tree.body)


class CalculatorEnv(MultiTurnEnv, ArithBase):
    """``a + b`` with 3-digit numbers and a ``calculate`` tool; scored on the final answer."""

    default_max_turns: ClassVar[int] = 2
    default_system_prompt: ClassVar[str | None] = (
        "Add the numbers. Call calculate to compute, then reply with the result in <answer></answer>."
    )

    def __init__(self, **options: Any) -> None:
        defaults = dict(num_steps=1, max_operand=999, operations="+", word_problems=False, proximity_weight=0.0)
        super().__init__(**{**defaults, **options})

    @tool
    def calculate(self, expression: str) -> str:
        """Compute an integer expression.

        Args:
            expression: Integers with + - * and parentheses, e.g. 123 + 456.

        Returns:
            The value, or why it could not be computed.
        """
        try:
            return str(calculate_expression(expression))
        except ValueError as exc:  # the model's mistake: told to it
            return f"error: {exc}"


def grpo_args(out: str, steps: int, *, tools: bool, weights: list[float] | None = None):
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=out,
        max_steps=steps,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=32 if tools else 8,
        max_tool_calling_iterations=2 if tools else None,
        reward_weights=weights,
        remove_unused_columns=False,
        seed=0,
        data_seed=0,
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        report_to=[],
        logging_steps=1,
        disable_tqdm=True,
    )


def steps_per_s(trainer) -> float:
    started = time.perf_counter()
    trainer.train()
    return trainer.state.global_step / (time.perf_counter() - started)


# ----- single-step ---------------------------------------------------------------------------------


def plain_reward(completions, answer, **_: Any) -> list[float]:
    """What people write by hand: the tagged integer against the dataset's answer column."""
    out = []
    for completion, gold in zip(completions, answer, strict=True):
        text = completion[-1]["content"] if isinstance(completion, list) else completion
        match = ANSWER.search(text)
        out.append(1.0 if match and match.group(1) == gold else 0.0)
    return out


def single_step(model: str, steps: int, out: str, ours: bool) -> float:
    from trl import GRPOTrainer

    env = envs.make("arith")
    rows = dataset(env, "train").select(range(512))
    if ours:
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=reward_funcs(env),
            train_dataset=rows,
            args=grpo_args(out, steps, tools=False, weights=reward_weights(env)),
        )
    else:
        plain = rows.rename_column("task_answer", "answer").select_columns(["prompt", "answer"])
        trainer = GRPOTrainer(model=model, reward_funcs=[plain_reward], train_dataset=plain, args=grpo_args(out, steps, tools=False))
    return steps_per_s(trainer)


# ----- tool env ------------------------------------------------------------------------------------


class HandWrittenCalculator:
    """A TRL environment written by hand for the same task: what rlvr-gym's bridge replaces."""

    def reset(self, answer: str, **_: Any) -> None:
        self.answer = answer

    def calculate(self, expression: str) -> str:
        """Compute an integer expression.

        Args:
            expression: Integers with + - * and parentheses, e.g. 123 + 456.

        Returns:
            The value, or why it could not be computed.
        """
        try:
            return str(calculate_expression(expression))
        except ValueError as exc:
            return f"error: {exc}"


def hand_written_reward(completions, environments, **_: Any) -> list[float]:
    out = []
    for completion, env in zip(completions, environments, strict=True):
        match = ANSWER.search(str(completion[-1].get("content") or ""))
        out.append(1.0 if match and match.group(1) == env.answer else 0.0)
    return out


def tool_env(model: str, steps: int, out: str, ours: bool) -> float:
    from trl import GRPOTrainer

    env = CalculatorEnv()
    rows = dataset(env, "train").select(range(512))
    if ours:
        trainer = GRPOTrainer(
            model=model,
            environment_factory=environment_factory(env),
            reward_funcs=reward_funcs(env),
            train_dataset=rows,
            args=grpo_args(out, steps, tools=True),
        )
    else:
        plain = rows.rename_column("task_answer", "answer").select_columns(["prompt", "answer"])
        trainer = GRPOTrainer(
            model=model,
            environment_factory=HandWrittenCalculator,
            reward_funcs=[hand_written_reward],
            train_dataset=plain,
            args=grpo_args(out, steps, tools=True),
        )
    return steps_per_s(trainer)


def compare(name: str, arm, model: str, steps: int, rounds: int, out: Path) -> dict[str, Any]:
    ours, plain = [], []
    for r in range(rounds):
        plain.append(arm(model, steps, str(out / f"{name}-plain-{r}"), False))
        ours.append(arm(model, steps, str(out / f"{name}-ours-{r}"), True))
    result = {
        "plain_steps_per_s": statistics.median(plain),
        "ours_steps_per_s": statistics.median(ours),
        "rounds": {"plain": plain, "ours": ours},
    }
    result["slowdown"] = result["plain_steps_per_s"] / result["ours_steps_per_s"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("single-step", "tool-env"), default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    results: dict[str, Any] = {"steps": args.steps, "rounds": args.rounds}
    if args.only in (None, "single-step"):
        model = str(build_tiny_model(out / "arith-model", envs.make("arith")))
        results["single-step"] = compare("arith", single_step, model, args.steps, args.rounds, out)
    if args.only in (None, "tool-env"):
        model = str(build_tiny_model(out / "calc-model", CalculatorEnv(), tools=True))
        results["tool-env"] = compare("calc", tool_env, model, args.steps, args.rounds, out)
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
