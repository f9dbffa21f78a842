"""``CountdownVerifier``: the answer is an arithmetic expression that makes the target from the
given numbers, each used at most as often as it is given.

The expression is read by our whitelist parser (:mod:`rlvr_gym.verifiers.expression`: exact
rational arithmetic, bounded, no ``eval``); the numbers it uses are checked as a multiset against
the task's. Several committed answers (a hedge) fail unless each is right (:class:`SingleAnswer`).
"""

from __future__ import annotations

from collections import Counter

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.basic import extract_answer
from rlvr_gym.verifiers.expression import MAX_EXPRESSION_CHARS, ExpressionError, evaluate
from rlvr_gym.verifiers.protocol import Task
from rlvr_gym.verifiers.single_answer import SingleAnswer
from rlvr_gym.verifiers.verdict import Reason, Verdict

OPERATIONS = "+-*/"
"""Every operation the expression parser knows; a task may allow fewer."""


def _gold(task: Task, numbers_key: str, target_key: str) -> tuple[Counter[int], int]:
    numbers, target = task[numbers_key], task[target_key]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers) or not isinstance(
        target, int
    ):
        raise InvalidArgumentError(
            f"task needs integer {numbers_key!r} and {target_key!r}, got {numbers!r}, {target!r}"
        )
    return Counter(numbers), target


class CountdownVerifier:
    """Passes when the extracted expression equals ``task[target_key]`` exactly and uses only
    ``task[numbers_key]`` (each at most as often as given; all of them when ``use_all``) and
    only the ``operations`` the task allows (a task that poses ``+ -`` does not pay ``*`` or ``/``).

    An answer may end in ``= <target>`` (``(3 + 5) * 2 = 16``); every value after ``=`` must be
    the expression's value.
    """

    def __init__(
        self,
        numbers_key: str = "numbers",
        target_key: str = "target",
        *,
        use_all: bool = False,
        operations: str = OPERATIONS,
    ) -> None:
        if not isinstance(operations, str) or not operations or set(operations) - set(OPERATIONS):
            raise InvalidArgumentError(
                f"operations must be a non-empty string of {OPERATIONS!r}, got {operations!r}"
            )
        self.numbers_key, self.target_key, self.use_all = numbers_key, target_key, bool(use_all)
        self.operations = "".join(sorted(set(operations)))

    def __call__(self, completion: str, task: Task) -> Verdict:
        return SingleAnswer(self._match)(completion, task)

    def _match(self, completion: str, task: Task) -> Verdict:
        given, target = _gold(task, self.numbers_key, self.target_key)
        answer = extract_answer(completion)
        if answer is None or not answer.strip():
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > MAX_EXPRESSION_CHARS:
            return Verdict.fail(Reason.BAD_FORMAT, answer[:80], why="answer too long for an expression")
        expression, *claims = answer.split("=")
        try:
            result = evaluate(expression)
        except ExpressionError as exc:
            return Verdict.fail(Reason.BAD_FORMAT, answer, why=str(exc))
        for claim in claims:
            try:
                claimed = evaluate(claim).value
            except ExpressionError as exc:
                return Verdict.fail(Reason.BAD_FORMAT, answer, why=f"after '=': {exc}")
            if claimed != result.value:
                return Verdict.fail(
                    Reason.WRONG_ANSWER, answer, why=f"the expression is {result.value}, not {claimed}"
                )
        forbidden = set(result.operators) - set(self.operations)
        if forbidden:
            return Verdict.fail(
                Reason.WRONG_ANSWER,
                answer,
                why=f"uses operations the task does not allow: {''.join(sorted(forbidden))}",
            )
        used = Counter(result.numbers)
        extra = used - given
        if extra:
            return Verdict.fail(
                Reason.WRONG_ANSWER,
                answer,
                why=f"uses numbers not given (or too often): {sorted(extra.elements())}",
            )
        if self.use_all and used != given:
            return Verdict.fail(
                Reason.WRONG_ANSWER, answer, why=f"leaves out {sorted((given - used).elements())}"
            )
        if result.value != target:
            return Verdict.fail(
                Reason.WRONG_ANSWER, answer, why=f"the expression is {result.value}, not {target}"
            )
        return Verdict.correct(answer)

    def __repr__(self) -> str:
        return f"CountdownVerifier(use_all={self.use_all}, operations={self.operations!r})"


__all__ = ["OPERATIONS", "CountdownVerifier"]
