"""Deliberately hackable envs, one per exploit family, for the audit's tests.

Importing this module registers them as ``hack/<family>-v0`` (so ``rlvr-gym audit
hack/hedging-v0 --import tests.support.hackable_envs`` works). Each has a correct reference completion and
one weak verifier of a kind seen in the wild; the audit must name that verifier's family.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from rlvr_gym import envs
from rlvr_gym.envs.code_env import fenced
from rlvr_gym.verifiers import NumberMatch, Reason, Rubric, Task, Verdict, extract_answer, parse_number

TASKS = [
    {
        "question": f"Ava has {a} coins and gets {b} more. How many coins does Ava have now?",
        "answer": str(a + b),
    }
    for a, b in [(12, 7), (30, 15), (41, 9), (8, 26), (55, 13), (17, 4)]
]
CODE_TASKS = [
    {"fn": "add", "code": "def add(a, b):\n    return a + b", "cases": [((1, 2), 3), ((5, 7), 12)]},
    {"fn": "double", "code": "def double(x):\n    return 2 * x", "cases": [((3,), 6), ((10,), 20)]},
    {"fn": "neg", "code": "def neg(x):\n    return -x", "cases": [((3,), -3), ((0,), 0)]},
]


def _verdict(ok: bool, answer: str | None = None) -> Verdict:
    return Verdict.correct(answer) if ok else Verdict.fail(Reason.WRONG_ANSWER, answer)


def tags_present(completion: str, task: Task) -> Verdict:
    """Weak: rewards the format alone."""
    return _verdict("<answer>" in completion and "</answer>" in completion)


def substring(completion: str, task: Task) -> Verdict:
    """Weak: the gold appears anywhere in the completion."""
    return _verdict(task["answer"] in completion)


def on_topic(completion: str, task: Task) -> Verdict:
    """Weak: 'stays on topic' — most of the question's words reappear — or the answer is right."""
    words = set(task["question"].lower().split())
    overlap = len(words & set(completion.lower().split())) / len(words)
    return _verdict(overlap >= 0.5 or NumberMatch()(completion, task).passed)


def within_ten_percent(completion: str, task: Task) -> Verdict:
    """Weak: any number within 10 % of the gold passes."""
    answer = extract_answer(completion)
    value = parse_number(answer) if answer else None
    gold = parse_number(task["answer"])
    return _verdict(value is not None and abs(value - gold) <= abs(gold) / 10, answer)


def long_is_thorough(completion: str, task: Task) -> Verdict:
    """Weak: a long completion is 'thorough reasoning'; a correct short one passes too."""
    return _verdict(len(completion) > 5_000 or NumberMatch()(completion, task).passed)


def whole_string(completion: str, task: Task) -> Verdict:
    """Too strict: only the exact reference string passes (equivalent renderings fail)."""
    return _verdict(completion == f"<answer>{task['answer']}</answer>")


class TextHackEnv(envs.SingleTurnEnv):
    """Arithmetic questions scored by one weak verifier."""

    splits = ("test",)
    default_system_prompt = "Answer with the number in <answer></answer> tags."

    def __init__(self, verifier: Any, **options: Any) -> None:
        super().__init__(**options)
        self.rubric = Rubric({"correct": verifier})

    def load_tasks(self, split: str) -> Sequence[Task]:
        return TASKS

    def question(self, task: Task) -> str:
        return task["question"]

    def reference_completion(self, task: Task) -> str:
        return f"<answer>{task['answer']}</answer>"


def exit_status(completion: str, task: Task) -> Verdict:
    """Weak harness: run the program then the asserts in one process; exit status 0 passes."""
    match = re.search(r"```python\n(.*?)```", completion, re.DOTALL)
    if match is None:
        return Verdict.fail(Reason.BAD_FORMAT)
    asserts = "\n".join(f"assert {task['fn']}(*{args!r}) == {want!r}" for args, want in task["cases"])
    try:
        with tempfile.TemporaryDirectory() as scratch:  # weak judging, but not on the host's files
            done = subprocess.run(
                [sys.executable, "-I", "-c", f"{match.group(1)}\n{asserts}\n"],
                capture_output=True,
                timeout=2,
                check=False,
                cwd=scratch,
            )
    except subprocess.TimeoutExpired:
        return Verdict.fail(Reason.TIMEOUT)
    except ValueError:  # NUL bytes in the program
        return Verdict.fail(Reason.BAD_FORMAT)
    return _verdict(done.returncode == 0)


class CodeHackEnv(envs.SingleTurnEnv):
    """Tiny function tasks judged by the exit status of program + asserts."""

    splits = ("test",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.rubric = Rubric({"correct": exit_status})

    def load_tasks(self, split: str) -> Sequence[Task]:
        return CODE_TASKS

    def question(self, task: Task) -> str:
        return f"Write `{task['fn']}`."

    def reference_completion(self, task: Task) -> str:
        return fenced(task["code"])


def instructions_only(completion: str, task: Task) -> Verdict:
    """Weak: every instruction followed and one topic word (the gate ifeval-v0 had): form, no substance."""
    from rlvr_gym.verifiers.instructions import check

    on_topic = any(t in completion.lower() for t in task["topic"])
    followed = all(check(i["id"], i["kwargs"], completion, task["prompt"]) for i in task["instructions"])
    return _verdict(on_topic and followed)


def _instruction_hack_env(**options: Any) -> envs.Env:
    """ifeval-v0's tasks scored by :func:`instructions_only`."""
    env = envs.make("ifeval", **options)
    env.rubric = Rubric({"correct": instructions_only})
    return env


WEAK = {
    "format_without_substance": tags_present,
    "hedging": substring,
    "echo": on_topic,
    "near_miss": within_ten_percent,
    "malformed": long_is_thorough,
    "equivalent": whole_string,
}
"""The family each weak verifier must be caught by."""

for _family, _verifier in WEAK.items():
    _id = f"hack/{_family.replace('_', '-')}-v0"
    if _id not in envs.registry:
        envs.register(_id, TextHackEnv, verifier=_verifier)
if "hack/instruction-echo-v0" not in envs.registry:
    envs.register("hack/instruction-echo-v0", _instruction_hack_env)
if "hack/code-harness-v0" not in envs.registry:
    envs.register("hack/code-harness-v0", CodeHackEnv)
