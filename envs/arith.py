"""``arith``: procedural integer arithmetic word problems, fully offline.

Every task is a pure function of ``(seed, split, index)``: no files, no hub, no global RNG, so
the env doubles as the demo and the test env. Knobs set the difficulty.

Curriculum: ``curriculum=[(0, {"num_steps": 1}), (200, {"num_steps": 2}), (500, {"num_steps": 3,
"max_operand": 50})]`` makes the train split one block of ``train_size`` tasks per stage (a
task's index fixes its difficulty), and ``env.schedule(trainer_state)`` — called by the reward
functions with TRL's ``trainer_state`` — moves to the stage for the current step;
:func:`rlvr_gym.backends.trl_adapter.curriculum_dataset` draws prompts from that stage's block.
The test split is at the last stage's difficulty.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rlvr_gym.envs.config import EnvConfig, configure, knob
from rlvr_gym.envs.env import Env, SingleTurnEnv
from rlvr_gym.envs.generated import GeneratedTasks
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import NumberMatch, NumericProximity, Rubric, Task

OPERATIONS = "+-*"
_NAMES = ("Ava", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kira", "Leo")
_ITEMS = ("apples", "marbles", "stickers", "coins", "books", "shells", "cards", "pencils")
_STEP_WORDS = {
    "+": "{name} gets {n} more.",
    "-": "{name} gives away {n}.",
    "*": "Then the number of {item} {name} has becomes {n} times as large.",
}
_SYMBOLS = {"+": "+", "-": "-", "*": "×"}

SYSTEM_PROMPT = (
    "Solve the arithmetic problem. Give the final answer as an integer inside <answer></answer> "
    "tags, e.g. <answer>42</answer>; any working goes before it."
)


def _apply(op: str, left: int, right: int) -> int:
    return left + right if op == "+" else left - right if op == "-" else left * right


def generate_task(
    seed: int,
    split: str,
    index: int,
    *,
    num_steps: int,
    max_operand: int,
    operations: str,
    allow_negative: bool,
    word_problems: bool,
) -> dict[str, Any]:
    """The task at ``index`` of ``split``: a start value and ``num_steps`` operations in order.

    A string-seeded ``random.Random`` is stable across processes and Python versions, unlike
    ``hash()``. Steps that would go below zero are turned into additions unless
    ``allow_negative``; multipliers stay small (2..9) so answers stay readable.
    """
    rng = random.Random(f"rlvr-gym/arith/{seed}/{split}/{index}")
    value = rng.randint(min(2, max_operand), max_operand)
    start, steps, working = value, [], []
    for _ in range(num_steps):
        op = rng.choice(operations)
        n = rng.randint(2, min(9, max(2, max_operand))) if op == "*" else rng.randint(1, max_operand)
        if op == "-" and not allow_negative and n > value:
            op = "+"
        result = _apply(op, value, n)
        working.append(f"{value} {_SYMBOLS[op]} {n} = {result}")
        steps.append((op, n))
        value = result
    if word_problems:
        name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
        sentences = [f"{name} has {start} {item}."]
        sentences += [_STEP_WORDS[op].format(name=name, n=n, item=item) for op, n in steps]
        sentences.append(f"How many {item} does {name} have now?")
        question = " ".join(sentences)
    else:
        expression = str(start)
        for position, (op, n) in enumerate(steps):
            left = f"({expression})" if position else expression  # steps apply in order
            expression = f"{left} {_SYMBOLS[op]} {n}"
        question = f"Compute {expression}."
    return {
        "question": question,
        "answer": str(value),
        "working": "\n".join(working),
        "split": split,
        "index": index,
    }


class ArithTasks(GeneratedTasks):
    """A lazy, indexable sequence of generated tasks (nothing is stored).

    ``stages``: parameter overrides per curriculum stage; the sequence is then ``size`` tasks of
    each stage in turn (index ``i`` is stage ``i // size``), so a task's index fixes its
    difficulty forever and rewards find it whatever stage training is in.
    """

    def __init__(self, size: int, stages: Sequence[Mapping[str, Any]] = ({},), **params: Any) -> None:
        self.stage_size, self.stages, self.params = size, list(stages), params
        self.size = size * len(self.stages)

    def task(self, index: int) -> dict[str, Any]:
        stage = self.stages[index // self.stage_size]
        return generate_task(index=index, **{**self.params, **stage})

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(self.size))


@dataclass(frozen=True)
class ArithConfig(EnvConfig):
    """``arith``'s knobs: how many steps, how large the operands, which operations."""

    seed: int = knob(0, "tasks are a pure function of (seed, split, index)")
    num_steps: int = knob(2, "operations per problem")
    max_operand: int = knob(20, "largest operand")
    operations: str = knob("+-", f"the operations used: letters of {OPERATIONS!r}")
    allow_negative: bool = knob(False, "let running totals go below zero")
    word_problems: bool = knob(True, "pose word problems (off: bare expressions)")
    train_size: int = knob(10_000, "train tasks (per curriculum stage)")
    test_size: int = knob(500, "test tasks")
    proximity_weight: float = knob(0.5, "weight of the shaping reward for numbers close to the answer")
    curriculum: tuple[tuple[int, Mapping[str, Any]], ...] | None = knob(
        None,
        "train in stages: each from its start step, with these difficulty knobs (module docs)",
        kind="a list of (start_step, {num_steps/max_operand/operations: value})",
    )

    def validate(self) -> None:
        for name in ("num_steps", "max_operand", "train_size", "test_size"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if not self.operations or set(self.operations) - set(OPERATIONS):
            raise InvalidArgumentError(
                f"operations must be a non-empty string of {OPERATIONS!r}, got {self.operations!r}"
            )


class ArithBase(Env):
    """arith's tasks, prompt and rubric without a turn protocol: ``ArithEnv`` adds single-step
    play, a tool env its tools (so that tool env is not a ``SingleTurnEnv``)."""

    default_system_prompt = SYSTEM_PROMPT
    config_class: ClassVar[type[ArithConfig]] = ArithConfig

    def __init__(self, config: ArithConfig | None = None, /, **knobs: Any) -> None:
        config = configure(self, config, knobs)
        super().__init__(**config.env_options())
        self.params = {
            "seed": config.seed,
            "num_steps": config.num_steps,
            "max_operand": config.max_operand,
            "operations": "".join(dict.fromkeys(config.operations)),
            "allow_negative": config.allow_negative,
            "word_problems": config.word_problems,
        }
        self.sizes = {"train": config.train_size, "test": config.test_size}
        self.curriculum = _curriculum(config.curriculum, self.params)
        self.stage = 0
        self.rubric = Rubric(
            {
                "correct": NumberMatch("answer"),  # refuses hedges itself
                "proximity": NumericProximity("answer", scale=1.0),
            },
            weights={"proximity": config.proximity_weight},
        )

    def load_tasks(self, split: str) -> Sequence[Task]:
        """Train: ``train_size`` tasks per curriculum stage, in stage order. Test: ``test_size``
        tasks at the last stage's difficulty (what the curriculum trains towards)."""
        stages = [overrides for _, overrides in self.curriculum] or [{}]
        if split == "test":
            return ArithTasks(self.sizes[split], split=split, **{**self.params, **stages[-1]})
        return ArithTasks(self.sizes[split], stages, split=split, **self.params)

    # ----- curriculum ----------------------------------------------------------------------------
    def schedule(self, progress: Any) -> int:
        """Move to the curriculum stage for ``progress``: a training step, or TRL's
        ``trainer_state`` (its ``global_step``), as reward functions receive it. Returns the stage.

        Without a curriculum there is one stage, 0.
        """
        step = getattr(progress, "global_step", progress)
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InvalidArgumentError(f"schedule() needs a step >= 0 or a trainer state, got {progress!r}")
        self.stage = max((k for k, (start, _) in enumerate(self.curriculum) if start <= step), default=0)
        return self.stage

    def stage_indices(self, stage: int | None = None) -> range:
        """The train indices of ``stage`` (default: the current one) — where a sampler draws from."""
        stage = self.stage if stage is None else stage
        size = self.sizes["train"]
        return range(stage * size, (stage + 1) * size)

    def question(self, task: Task) -> str:
        return task["question"]

    def reference_completion(self, task: Task) -> str:
        """The bare tagged answer: short enough for a tiny model to imitate in a warm start."""
        return f"<answer>{task['answer']}</answer>"

    def wrong_completions(self, task: Task) -> list[str]:
        near_miss = int(task["answer"]) + 1
        return [
            *super().wrong_completions(task),
            f"{task['working']}\n<answer>{near_miss}</answer>",
            f"<answer>{task['answer']} or {near_miss}</answer>",
        ]


class ArithEnv(ArithBase, SingleTurnEnv):
    """Integer arithmetic word problems, generated offline; difficulty set by steps and operand size."""


CURRICULUM_KEYS = frozenset({"num_steps", "max_operand", "operations"})


def _curriculum(
    curriculum: Sequence[tuple[int, Mapping[str, Any]]] | None, base: Mapping[str, Any]
) -> list[tuple[int, dict[str, Any]]]:
    """Validated ``[(start_step, overrides), ...]``: starts strictly increasing from 0, overrides
    of ``num_steps``, ``max_operand`` and ``operations`` only (the knobs that set difficulty)."""
    if curriculum is None:
        return []
    stages, last = [], -1
    for entry in curriculum:
        if not (isinstance(entry, tuple | list) and len(entry) == 2 and isinstance(entry[1], Mapping)):
            raise InvalidArgumentError(f"curriculum entries are (start_step, {{knob: value}}), got {entry!r}")
        start, overrides = entry
        if isinstance(start, bool) or not isinstance(start, int) or start <= last:
            raise InvalidArgumentError(f"curriculum start steps must be integers increasing from 0, got {start!r}")
        unknown = set(overrides) - CURRICULUM_KEYS
        if unknown:
            raise InvalidArgumentError(f"curriculum knobs are {sorted(CURRICULUM_KEYS)}, got {sorted(unknown)}")
        merged = {**base, **overrides}
        for name in ("num_steps", "max_operand"):
            value = merged[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"curriculum {name} must be an integer >= 1, got {value!r}")
        if (
            not isinstance(merged["operations"], str)
            or not merged["operations"]
            or set(merged["operations"]) - set(OPERATIONS)
        ):
            raise InvalidArgumentError(f"curriculum operations must be a non-empty string of {OPERATIONS!r}")
        stages.append((start, dict(overrides)))
        last = start
    if stages and stages[0][0] != 0:
        raise InvalidArgumentError("the curriculum's first stage must start at step 0")
    return stages
