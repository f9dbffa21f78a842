"""``countdown``: make a target number from given numbers with ``+ - * /`` (the TinyZero task).

Every task is generated *from a solution*: numbers are drawn, a random expression tree is built
over some (or all) of them, and its value becomes the target, so every task is solvable and the
reference completion is that expression. Tasks are a pure function of ``(seed, split, index)``
(a string-seeded ``random.Random``), so two instances pose the same tasks. Scoring is
:class:`~rlvr_gym.verifiers.countdown.CountdownVerifier`: our whitelist parser, exact rational
value, multiset check on the numbers used.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from rlvr_gym.envs.config import EnvConfig, configure, knob
from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.envs.generated import GeneratedTasks
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Rubric, Task
from rlvr_gym.verifiers.countdown import OPERATIONS, CountdownVerifier

MAX_TRIES = 64
SYSTEM_PROMPT = (
    "Combine the given numbers with the operations the question allows (and parentheses) to make "
    "the target. Give the "
    "expression inside <answer></answer> tags, e.g. <answer>(3 + 5) * 2</answer>; working goes before it."
)
_WORDS = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division"}


def _combine(op: str, left: Fraction, right: Fraction) -> Fraction | None:
    """The value of ``left op right``, or ``None`` where the generator avoids it (a result that is
    not a positive integer keeps every intermediate value a plain Countdown number)."""
    if op == "/":
        if right == 0 or left % right:
            return None
        value = left / right
    else:
        value = left + right if op == "+" else left - right if op == "-" else left * right
    return value if value > 0 and value.denominator == 1 else None


def _solve_from(rng: random.Random, values: list[int], operations: str) -> tuple[str, int] | None:
    """A random expression tree over ``values`` and its value (``None`` if the draw dead-ends)."""
    items: list[tuple[str, Fraction, bool]] = [(str(v), Fraction(v), False) for v in values]
    while len(items) > 1:
        i, j = rng.sample(range(len(items)), 2)
        (a, x, a_compound), (b, y, b_compound) = items[i], items[j]
        for op in rng.sample(operations, len(operations)):
            value = _combine(op, x, y)
            if value is not None:
                break
        else:
            return None
        left = f"({a})" if a_compound else a
        right = f"({b})" if b_compound else b
        items = [item for k, item in enumerate(items) if k not in (i, j)] + [
            (f"{left} {op} {right}", value, True)
        ]
    text, value, _ = items[0]
    return text, int(value)


def generate_task(
    seed: int,
    split: str,
    index: int,
    *,
    num_count: int,
    min_number: int,
    max_number: int,
    max_target: int,
    operations: str,
    use_all: bool,
) -> dict[str, Any]:
    """The task at ``index``: numbers, a target no single number equals, and one solution.

    Each of :data:`MAX_TRIES` draws takes fresh numbers and a random tree over them. If none lands
    in range, the sum of the numbers is the target when ``+`` is allowed (larger than each, so
    never a given number); without ``+`` the knobs leave no task and that is a clear error.
    """
    rng = random.Random(f"rlvr-gym/countdown/{seed}/{split}/{index}")
    for _ in range(MAX_TRIES):
        numbers = [rng.randint(min_number, max_number) for _ in range(num_count)]
        size = num_count if use_all else rng.randint(2, num_count)
        found = _solve_from(rng, rng.sample(numbers, size), operations)
        if found is not None and found[1] <= max_target and found[1] not in numbers:
            solution, target = found
            break
    else:
        if "+" not in operations:
            raise InvalidArgumentError(
                f"countdown found no task at {split}[{index}] in {MAX_TRIES} draws with operations="
                f"{operations!r}, max_target={max_target}: allow '+' or raise max_target"
            )
        solution, target = " + ".join(map(str, numbers)), sum(numbers)
    return {"numbers": numbers, "target": target, "solution": solution, "split": split, "index": index}


class CountdownTasks(GeneratedTasks):
    """A lazy, indexable sequence of generated tasks (nothing is stored)."""

    def __init__(self, size: int, **params: Any) -> None:
        self.size, self.params = size, params

    def task(self, index: int) -> dict[str, Any]:
        return generate_task(index=index, **self.params)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(self.size))


def _positive_int(name: str, value: object, low: int = 1, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise InvalidArgumentError(f"{name} must be an integer {bound}, got {value!r}")
    return value


@dataclass(frozen=True)
class CountdownConfig(EnvConfig):
    """``countdown``'s knobs: how many numbers, how large, which operations."""

    seed: int = knob(0, "tasks are a pure function of (seed, split, index)")
    num_count: int = knob(4, "numbers given (2 to 8)")
    min_number: int = knob(1, "smallest number given")
    max_number: int = knob(99, "largest number given (at most 10**6)")
    max_target: int = knob(999, "largest target")
    operations: str = knob(OPERATIONS, f"the operations allowed: letters of {OPERATIONS!r}")
    use_all: bool = knob(False, "every number must be used exactly once")
    train_size: int = knob(10_000, "train tasks")
    test_size: int = knob(500, "test tasks")

    def validate(self) -> None:
        _positive_int("num_count", self.num_count, 2, 8)
        _positive_int("min_number", self.min_number)
        _positive_int("max_number", self.max_number, self.min_number, 10**6)
        _positive_int("max_target", self.max_target, 2)
        _positive_int("train_size", self.train_size)
        _positive_int("test_size", self.test_size)
        if not self.operations or set(self.operations) - set(OPERATIONS):
            raise InvalidArgumentError(
                f"operations must be a non-empty string of {OPERATIONS!r}, got {self.operations!r}"
            )


class CountdownEnv(SingleTurnEnv):
    """Countdown: make the target from the given numbers with + - * / (each number at most once)."""

    default_system_prompt = SYSTEM_PROMPT
    config_class: ClassVar[type[CountdownConfig]] = CountdownConfig

    def __init__(self, config: CountdownConfig | None = None, /, **knobs: Any) -> None:
        config = configure(self, config, knobs)
        super().__init__(**config.env_options())
        self.params = {
            "seed": config.seed,
            "num_count": config.num_count,
            "min_number": config.min_number,
            "max_number": config.max_number,
            "max_target": config.max_target,
            "operations": "".join(dict.fromkeys(config.operations)),
            "use_all": config.use_all,
        }
        self.sizes = {"train": config.train_size, "test": config.test_size}
        self.rubric = Rubric(
            {"correct": CountdownVerifier(use_all=config.use_all, operations=self.params["operations"])}
        )

    def load_tasks(self, split: str) -> Sequence[Task]:
        return CountdownTasks(self.sizes[split], split=split, **self.params)

    def question(self, task: Task) -> str:
        numbers = ", ".join(map(str, task["numbers"]))
        ops = ", ".join(f"{_WORDS[op]} ({op})" for op in self.params["operations"])
        rule = "each number exactly once" if self.params["use_all"] else "each number at most once"
        return f"Using the numbers [{numbers}], make {task['target']}. You may use {ops}, with {rule}."

    def reference_completion(self, task: Task) -> str:
        return f"<answer>{task['solution']}</answer>"

    def wrong_completions(self, task: Task) -> list[str]:
        numbers, solution = list(task["numbers"]), task["solution"]
        first = solution.split(" ", 1)[0].strip("()")
        bumped = solution.replace(first, str(int(first) + 1), 1)
        n = numbers[0]
        return [
            *super().wrong_completions(task),
            f"<answer>{task['target']}</answer>",  # the target itself: not a given number
            f"<answer>{bumped}</answer>",  # one number nudged: another value
            f"<answer>({solution}) * {n} / {n}</answer>",  # right value, a number used too often
            f"<answer>{task['target']}</answer>\n<answer>{solution}</answer>",  # a hedge
            f"<answer>{solution} + </answer>",  # malformed
        ]
