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
"""

from __future__ import annotations

from typing import Literal

from rlvr_gym.error import InvalidArgument
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
            raise InvalidArgument(f"mode must be 'strict' or 'loose', got {mode!r}")
        if aggregate not in ("all", "fraction"):
            raise InvalidArgument(f"aggregate must be 'all' or 'fraction', got {aggregate!r}")
        require_packages()
        self.mode, self.aggregate, self.substance_gate = mode, aggregate, bool(substance_gate)

    def __call__(self, completion: str, task: Task) -> Verdict:
        problem = substance_problem(completion, task) if self.substance_gate else None
        if problem is not None:
            return Verdict.fail(Reason.BAD_FORMAT, why=problem)
        test = check if self.mode == "strict" else check_loose
        prompt = task.get("prompt", "")
        followed = {i["id"]: test(i["id"], i["kwargs"], completion, prompt) for i in task["instructions"]}
        share = sum(followed.values()) / len(followed)
        if all(followed.values()):
            return Verdict.correct(followed=followed, mode=self.mode)
        score = share if self.aggregate == "fraction" else 0.0
        missed = [name for name, ok in followed.items() if not ok]
        return Verdict.fail(
            Reason.WRONG_ANSWER, score=score, followed=followed, missed=missed, mode=self.mode
        )

    def __repr__(self) -> str:
        return f"InstructionsFollowed({self.mode!r}, {self.aggregate!r})"


__all__ = ["MIN_DISTINCT", "MIN_WORDS", "InstructionsFollowed", "substance_problem"]
