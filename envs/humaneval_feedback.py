"""``humaneval-feedback``: submit a solution, see which tests fail, retry within a turn budget.

Each HumanEval ``check`` made only of asserts is split into one case per assert. Every second
case is *visible*: the feedback says which of them failed, naming each by its number and, where
the assert is ``candidate(args) == expected``, by the call ``candidate(args)`` — never the
expected value, the assert's source or its message. The other cases are *held back*: never named,
never run until the episode is over. The reward is 1.0 when the final submission passes every
held-back test, else 0 (the verdict's details still count them), so only what generalises pays:
a lookup table replayed from the feedback (the visible calls and values guessed for them) earns
nothing for tests it never saw, and a constant earns nothing for the tests it happens to match.
A task with one case has no visible test: its first submission is final.

The episode ends when a submission passes every visible test (``terminated``) or after
``max_turns`` messages (``truncated``; the last submission is final). A submission is a ``submit``
call, or a message without a tool call (its code block); one per message — a second ``submit``
in the same message is refused unrun, so a message cannot carry several guesses.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rlvr_gym.envs.code_env import FENCE_INSTRUCTION, fenced
from rlvr_gym.envs.config import ToolEnvConfig, configure
from rlvr_gym.envs.humaneval import HumanEvalBase, HumanEvalConfig
from rlvr_gym.envs.tool_env import Final, MultiTurnEnv, tool
from rlvr_gym.verifiers import Reason, Task, Verdict

_FAILED = re.compile(r"^test (\d+): (\w+)")
CALL_CHARS = 120


def split_check(row: Mapping[str, Any]) -> tuple[dict[str, Any], list[str | None]]:
    """HumanEval tests as one ``assert`` case per assert of ``check``, and each case's visible
    call (``None`` where it cannot be shown without the expected value). A ``check`` with anything
    but asserts stays one case."""
    entry_point, source = row["entry_point"], row["test"]
    whole = {"kind": "assert", "setup": row["prompt"], "entry_point": entry_point}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {**whole, "cases": [f"{source}\n\ncheck({entry_point})\n"]}, [None]
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    body = [] if check is None else [s for s in check.body if not _is_docstring(s)]
    if not body or not all(isinstance(s, ast.Assert) for s in body):
        return {**whole, "cases": [f"{source}\n\ncheck({entry_point})\n"]}, [None]
    prelude = ast.unparse([n for n in tree.body if n is not check])
    param = check.args.args[0].arg if check.args.args else "candidate"
    cases, calls = [], []
    for statement in body:
        cases.append(
            f"{prelude}\n\ndef check({param}):\n    {ast.unparse(statement)}\n\ncheck({entry_point})\n"
        )
        calls.append(_visible_call(statement, param))
    return {**whole, "cases": cases}, calls


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _visible_call(statement: ast.Assert, param: str) -> str | None:
    """``candidate(args)`` of ``assert candidate(args) == expected`` (args without the answer)."""
    test = statement.test
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.Is)
    ):
        return None
    left = test.left
    if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == param:
        text = ast.unparse(left)
        return text if len(text) <= CALL_CHARS else text[:CALL_CHARS] + "..."
    return None


@dataclasses.dataclass(frozen=True)
class HumanEvalFeedbackConfig(ToolEnvConfig, HumanEvalConfig):
    """``humaneval-feedback``'s knobs: the turn budget and ``humaneval``'s."""


class HumanEvalFeedbackEnv(MultiTurnEnv, HumanEvalBase):
    """HumanEval with test feedback between attempts; reward from the final submission."""

    default_max_turns: ClassVar[int] = 3
    default_system_prompt: ClassVar[str | None] = (
        "You are an expert Python programmer. Submit a complete solution with the submit tool or as "
        "one ```python fenced block. If tests fail you are told which, and may submit again."
    )

    config_class: ClassVar[type[HumanEvalFeedbackConfig]] = HumanEvalFeedbackConfig

    def __init__(self, config: HumanEvalFeedbackConfig | None = None, /, **knobs: Any) -> None:
        config = configure(self, config, knobs)
        super().__init__(**config.tool_options(), **config.env_options())
        self.rubric = self.verifier  # one component: its details (which tests failed) reach the feedback

    def load_tasks(self, split: str) -> Sequence[Task]:
        """Tasks whose ``tests`` are every case (the single-step path), split into
        ``feedback_tests`` (``None`` when there is none) and ``heldback_tests``."""
        tasks = []
        for row in super().load_tasks(split):
            tests, calls = split_check(row)
            visible, held = split_visible(len(tests["cases"]))
            tasks.append(
                {
                    **row,
                    "tests": tests,
                    "feedback_tests": {**tests, "cases": [tests["cases"][i] for i in visible]}
                    if visible
                    else None,
                    "heldback_tests": {**tests, "cases": [tests["cases"][i] for i in held]},
                    "visible_calls": [calls[i] for i in visible],
                }
            )
        return tasks

    def question(self, task: Task) -> str:
        return (
            "Complete this Python function. Keep its name and signature, and include any imports "
            f"and helper functions it uses. {FENCE_INSTRUCTION}\n\n{fenced(task['prompt'])}"
        )

    def wrong_completions(self, task: Task) -> list[str]:
        return [*super().wrong_completions(task), fenced("def broken(:\n    pass")]

    @tool
    def submit(self, code: str) -> str:
        """Submit a complete solution and run the hidden tests on it.

        Args:
            code: The complete Python solution: the function with its imports and helpers.

        Returns:
            Which tests failed, or that all passed.
        """
        if self._submitted_in == len(self._turns):  # this message submitted already
            return "error: one submission per message; this one was not run"
        return self._attempt(fenced(code))  # type: ignore[return-value]

    def on_answer(self, text: str, task: Task) -> Final | str:
        return self._attempt(text)

    def out_of_turns(self, task: Task) -> Verdict:
        """The last submission scored on the held-back tests: the reward is what it earned."""
        if self._final is None and self._last_text is not None:
            self._final = self._held_back_verdict(self._last_text, task)
        return (
            self._final
            if self._final is not None
            else Verdict.fail(Reason.NO_ANSWER, why="nothing was submitted")
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._last_text: str | None = None
        self._final: Verdict | None = None
        self._submitted_in = -1
        return super().reset(seed=seed, options=options)

    def spawn(self) -> HumanEvalFeedbackEnv:
        other = super().spawn()
        other._last_text, other._final, other._submitted_in = None, None, -1
        return other  # type: ignore[return-value]

    def _held_back_verdict(self, text: str, task: Task) -> Verdict:
        """The final verdict: every held-back test must pass, as in HumanEval's own pass@1 (a
        fraction paid constants: ``return False`` passes 5 of 8 of prime_length's tests)."""
        verdict = self.verify(text, {**task, "tests": task["heldback_tests"]})
        return verdict if verdict.passed or verdict.score == 0.0 else dataclasses.replace(verdict, score=0.0)

    def _attempt(self, text: str) -> Final | str:
        _, _, task = self._current  # type: ignore[misc]
        self._submitted_in, self._last_text, self._final = len(self._turns), text, None
        if task["feedback_tests"] is None:
            self._final = self._held_back_verdict(text, task)
            self.note(submission=True, reason=self._final.reason.value)
            return Final(
                self._final, "Submitted; this task has no visible tests, so this submission is final."
            )
        verdict = self.verify(text, {**task, "tests": task["feedback_tests"]})
        self.note(submission=True, reason=verdict.reason.value, visible_score=verdict.score)
        if verdict.reason is Reason.ERROR:
            self.note(infra_error=str(verdict.details.get("error", "verifier error")))
        if verdict.passed:
            self._final = self._held_back_verdict(text, task)
            return Final(self._final, feedback(verdict, task))
        return feedback(verdict, task)


def split_visible(count: int) -> tuple[list[int], list[int]]:
    """Indices of the visible and the held-back cases among ``count``: every second case is held
    back (the second, fourth, ...); a single case is held back, leaving nothing visible."""
    if count <= 1:
        return [], list(range(count))
    return list(range(0, count, 2)), list(range(1, count, 2))


def feedback(verdict: Verdict, task: Task) -> str:
    """What a submission's author may learn: which visible tests failed, never what they
    expected (``verdict`` is the submission's on ``task["feedback_tests"]``)."""
    details = verdict.details
    if verdict.passed:
        return "All visible tests passed."
    if verdict.reason is Reason.NO_ANSWER:
        return "No Python code was found in the submission."
    if verdict.reason in (Reason.BAD_FORMAT, Reason.UNSAFE):
        why = details.get("why")
        first = why[0] if isinstance(why, list) and why else why
        return f"The submission was refused ({verdict.reason.value}): {str(first)[:200]}"
    if verdict.reason is Reason.ERROR:
        return "The tests could not be run (a fault of ours, not the submission's)."
    passed, total = details.get("tests_passed", 0), details.get("tests_total", 0)
    lines = [f"{total - passed} of {total} visible tests failed."]
    if details.get("load_error"):
        lines.append(f"The code failed to load: {str(details['load_error'])[:160]}")
    if verdict.reason is Reason.TIMEOUT:
        lines.append("The run hit the time limit.")
    failures = list(details.get("failures", []))
    if failures and len(failures) < total - passed:
        lines.append(f"The first {len(failures)} failures:")
    calls = task.get("visible_calls") or []
    for failure in failures:
        match = _FAILED.match(str(failure))
        if match is None:
            continue
        index, error = int(match.group(1)), match.group(2)
        call = calls[index] if index < len(calls) else None
        lines.append(f"- test {index + 1}: {call + ' ' if call else ''}failed ({error})")
    return "\n".join(lines)
