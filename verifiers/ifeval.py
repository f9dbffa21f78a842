"""``InstructionsFollowed``: score a response against a task's IFEval instructions.

A task carries ``instructions`` (``[{"id": ..., "kwargs": {...}}]``, IFEval's ids and keyword
names), the base ``prompt``, the instruction ``descriptions`` shown to the model and ``topic``
words. Each instruction is checked by :mod:`rlvr_gym.verifiers.instructions`, strictly or in
IFEval's loose mode; the verdict's details list each instruction's outcome.

IFEval's instructions are about form, so on their own they reward content-free text: "no commas"
is followed by an empty-tag reply, "include the word potato" by the prompt repeated back. Before
any instruction is checked the response must say something (:data:`MIN_WORDS` words,
:data:`MIN_DISTINCT` of them distinct), be on the base prompt's topic (one of its ``topic``
words), and not repeat the instructions' own wording; failing that scores 0. IFEval itself has no
such gate (it scores model answers, not a policy that learns to game it). The gate needs the
task's ``topic`` words: IFEval's own rows (``envs.make("ifeval-bench")``) have none and are
scored as IFEval scores them, each listed instruction once, with its ``kwargs`` as given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from rlvr_gym.error import InvalidArgument
from rlvr_gym.verifiers.instructions import MAX_RESPONSE_CHARS, check, check_loose, require_packages
from rlvr_gym.verifiers.protocol import Task
from rlvr_gym.verifiers.verdict import Reason, Verdict

MIN_WORDS = 8
MIN_DISTINCT = 5
_SPACE = re.compile(r"\s+")

Mode = Literal["strict", "loose"]
Aggregate = Literal["all", "fraction"]


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def substance_problem(text: str, task: Mapping[str, Any]) -> str | None:
    """Why ``text`` is not an attempt at the task (``None`` if it is one)."""
    if len(text) > MAX_RESPONSE_CHARS:
        return f"longer than {MAX_RESPONSE_CHARS} characters"
    words = re.findall(r"[A-Za-z]+", text.lower())
    if len(words) < MIN_WORDS or len(set(words)) < MIN_DISTINCT:
        return f"fewer than {MIN_WORDS} words ({MIN_DISTINCT} distinct): says nothing"
    if not set(words) & {t.lower() for t in task["topic"]}:
        return "off topic: none of the prompt's topic words"
    normal = _normal(text)
    if any(_normal(d) in normal for d in task["descriptions"]):
        return "repeats the instructions back"
    return None


class InstructionsFollowed:
    """A verifier over ``task["instructions"]``.

    ``mode``: ``"strict"`` (IFEval's strict) or ``"loose"`` (any of IFEval's loose variants).
    ``aggregate``: ``"all"`` scores 1.0 only when every instruction is followed, ``"fraction"``
    scores the share followed (``passed`` means all followed either way).
    """

    def __init__(self, mode: Mode = "strict", aggregate: Aggregate = "all", *, gate: bool = True) -> None:
        if mode not in ("strict", "loose"):
            raise InvalidArgument(f"mode must be 'strict' or 'loose', got {mode!r}")
        if aggregate not in ("all", "fraction"):
            raise InvalidArgument(f"aggregate must be 'all' or 'fraction', got {aggregate!r}")
        require_packages()
        self.mode, self.aggregate, self.gate = mode, aggregate, gate

    def __call__(self, completion: str, task: Task) -> Verdict:
        if self.gate and "topic" in task:  # IFEval's own rows carry no topic words: IFEval's scoring
            problem = substance_problem(completion, {"descriptions": (), **task})
            if problem is not None:
                return Verdict.fail(Reason.BAD_FORMAT, why=problem)
        test = check if self.mode == "strict" else check_loose
        prompt = task.get("prompt", "")
        # One outcome per listed instruction, as IFEval counts them: a prompt may list an id twice
        # (IFEval's "at least 300 words" and "less than 400 words"), and each is checked.
        outcomes = [
            (i["id"], bool(test(i["id"], ifeval_kwargs(i.get("kwargs")), completion, prompt)))
            for i in task["instructions"]
        ]
        followed = [ok for _, ok in outcomes]
        share = sum(followed) / len(followed)
        details = {"followed": [[name, ok] for name, ok in outcomes], "mode": self.mode}
        if all(followed):
            return Verdict.correct(**details)
        score = share if self.aggregate == "fraction" else 0.0
        missed = [name for name, ok in outcomes if not ok]
        return Verdict.fail(Reason.WRONG_ANSWER, score=score, missed=missed, **details)

    def __repr__(self) -> str:
        gate = "" if self.gate else ", gate=False"
        return f"InstructionsFollowed({self.mode!r}, {self.aggregate!r}{gate})"


def ifeval_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """An instruction's keyword arguments as IFEval's checkers receive them: the hub copy of
    IFEval pads every instruction's dict with all keyword names, ``None`` where unused, and
    IFEval's harness drops those (``{k: v for k, v in kwargs.items() if v is not None}``)."""
    return {key: value for key, value in (kwargs or {}).items() if value is not None}


__all__ = ["MIN_DISTINCT", "MIN_WORDS", "InstructionsFollowed", "ifeval_kwargs", "substance_problem"]
