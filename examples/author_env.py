"""Example 1: author a new environment in one file and register it.

The env asks for the number of vowels in a word. It needs four things: tasks per split, a
question, a rubric of verifiers, and an oracle answer (which ``check_env`` uses to prove the
rubric can award full marks). Registered, it works with ``envs.make``, ``rlvr-gym check``,
``trainers.evaluate`` and every training backend.

    python -m examples.author_env            # register, check, score two completions
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from rlvr_gym import envs
from rlvr_gym.verifiers import NumberMatch, Rubric, TagFormat

ENV_ID = "examples/vowels-v0"
WORDS = [
    "apple",
    "banana",
    "cherry",
    "grape",
    "lemon",
    "mango",
    "orange",
    "papaya",
    "quince",
    "tomato",
    "avocado",
    "kiwi",
]


class VowelCount(envs.SingleTurnEnv):
    """Count the vowels in a word; the answer goes in <answer> tags."""

    splits = ("train", "test")
    default_system_prompt = "Answer with the number only, inside <answer></answer> tags."

    def __init__(self, *, size: int = 64, **options) -> None:
        super().__init__(**options)
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size
        # A correct count decides `passed`; the tag format shapes the reward a little.
        self.rubric = Rubric(
            {"correct": NumberMatch(), "format": TagFormat(("answer",))}, weights={"format": 0.2}
        )

    def load_tasks(self, split: str) -> list[dict]:
        rng = random.Random(f"{split}-vowels")  # deterministic per split
        words = ["".join(rng.sample(WORDS, 2)) for _ in range(self.size)]
        return [{"word": w, "answer": str(sum(ch in "aeiou" for ch in w))} for w in words]

    def question(self, task: dict) -> str:
        return f"How many vowels (a, e, i, o, u) are in the word '{task['word']}'?"

    def reference_completion(self, task: dict) -> str:
        return f"<answer>{task['answer']}</answer>"


def register() -> None:
    """Register once (a second registration of one id is an error by design)."""
    if ENV_ID not in envs.registry:
        envs.register(ENV_ID, VowelCount, size=64)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="tasks per split")
    args = parser.parse_args(argv)
    register()
    env = envs.make(ENV_ID, size=args.size)
    passed = envs.check_env(env, n_tasks=min(8, args.size))
    print(f"check_env({ENV_ID}): {', '.join(passed)}")
    obs, info = env.reset(seed=0, options={"split": "test", "index": 0})
    task = info["task"]
    print(f"question: {obs[-1]['content']}")
    for completion in (env.reference_completion(task), f"{int(task['answer']) + 1}"):
        _, reward, *_, step_info = env.step(completion)
        print(f"  {completion!r:>22} -> reward {reward:.2f} ({step_info['verdict'].reason.value})")
        env.reset(options={"split": "test", "index": 0})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
