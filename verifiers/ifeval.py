"""``InstructionsFollowed``: score a response against a task's IFEval instructions.

A task carries ``instructions`` (``[{"id": ..., "kwargs": {...}}]``, IFEval's ids and keyword
names), the base ``prompt``, the instruction ``descriptions`` shown to the model and ``topic``
words. Each instruction is checked by :mod:`rlvr_gym.verifiers.instructions`, strictly or in
IFEval's loose mode; the verdict's details list each instruction's outcome.

IFEval's instructions are about form, so on their own they reward content-free text: "no commas"
is followed by an empty-tag reply, "include the word potato" by the prompt repeated back. Before
any instruction is checked the response must pass the substance gate
(:func:`rlvr_gym.verifiers.substance.substance_problem`: words of its own in any script, not
copied from the request, not filler, on topic, with the content an answer supplies); failing it
scores 0. IFEval itself has no such gate (it scores model answers, not a policy that learns to
game it).
``substance_gate=False`` scores as IFEval does (``envs.make("ifeval-bench")`` reports IFEval's
four numbers that way): each listed instruction checked, with its ``kwargs`` as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.instructions import check, check_loose, require_packages
from rlvr_gym.verifiers.protocol import Task
from rlvr_gym.verifiers.substance import MIN_DISTINCT, MIN_WORDS, substance_problem
from rlvr_gym.verifiers.verdict import Reason, Verdict

Mode = Literal["strict", "loose"]
Aggregate = Literal["all", "fraction"]


class InstructionsFollowed:
    """A verifier over ``task["instructions"]``.

    ``mode``: ``"strict"`` (IFEval's strict) or ``"loose"`` (any of IFEval's loose variants).
    ``aggregate``: ``"all"`` scores 1.0 only when every instruction is followed, ``"fraction"``
    scores the share followed (``passed`` means all followed either way). ``substance_gate``
    (on by default, for training) refuses an echo, a copy or filler of the request first; a
    benchmark scored as IFEval scores it (no gate) turns it off.
    """

    def __init__(
        self, mode: Mode = "strict", aggregate: Aggregate = "all", *, substance_gate: bool = True
    ) -> None:
        if mode not in ("strict", "loose"):
            raise InvalidArgumentError(f"mode must be 'strict' or 'loose', got {mode!r}")
        if aggregate not in ("all", "fraction"):
            raise InvalidArgumentError(f"aggregate must be 'all' or 'fraction', got {aggregate!r}")
        require_packages()
        self.mode, self.aggregate, self.substance_gate = mode, aggregate, bool(substance_gate)

    def __call__(self, completion: str, task: Task) -> Verdict:
        if self.substance_gate:
            problem = substance_problem(completion, task)
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
        gate = "" if self.substance_gate else ", substance_gate=False"
        return f"InstructionsFollowed({self.mode!r}, {self.aggregate!r}{gate})"


def ifeval_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """An instruction's keyword arguments as IFEval's checkers receive them: the hub copy of
    IFEval pads every instruction's dict with all keyword names, ``None`` where unused, and
    IFEval's harness drops those (``{k: v for k, v in kwargs.items() if v is not None}``)."""
    return {key: value for key, value in (kwargs or {}).items() if value is not None}


__all__ = ["MIN_DISTINCT", "MIN_WORDS", "InstructionsFollowed", "ifeval_kwargs", "substance_problem"]
