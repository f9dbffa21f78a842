"""``MathVerifier``: extract the final answer, then check it against the gold one."""

from __future__ import annotations

from typing import Any

from rlvr_gym.error import InvalidArgumentError, InvalidTypeError, RunFailedError
from rlvr_gym.verifiers.math import equivalence
from rlvr_gym.verifiers.math.budget import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, Worker, shared_worker
from rlvr_gym.verifiers.math.copied import copied_from_question
from rlvr_gym.verifiers.math.exactness import MIN_PLACES, check_precision
from rlvr_gym.verifiers.math.extract import (
    MAX_ANSWER_CHARS,
    MAX_COMPLETION_CHARS,
    extract_answer,
    final_number,
    reference_answer,
)
from rlvr_gym.verifiers.math.normalize import decimal_comma, fast_number, normalize
from rlvr_gym.verifiers.protocol import Task
from rlvr_gym.verifiers.verdict import Reason, Verdict

MIN_ECHOED_QUESTION = 16
"""A question at least this long, written out verbatim in a completion, is cut out before extraction."""

_REASONS = {
    equivalence.DIFFERENT: Reason.WRONG_ANSWER,
    equivalence.INVALID: Reason.BAD_FORMAT,
    equivalence.TOO_LARGE: Reason.BAD_FORMAT,
    equivalence.TIMEOUT: Reason.TIMEOUT,
}


class MathVerifier:
    """Passes when the completion's final answer equals ``task[answer_key]`` mathematically.

    Plain numbers are settled in-process (exact fractions); symbolic answers go to a warm worker
    process with a hard ``timeout`` (seconds) and ``memory_mb`` budget. The last-number fallback
    (``last_number_fallback``) is off by default: a strict env wants a committed answer; ``strict``
    accepts only an explicit container (``<answer>``, ``\\boxed{}``, ``####``), see
    :func:`rlvr_gym.verifiers.math.extract.extract_answer` for the order of the steps.
    ``details["path"]`` says how the verdict was reached (string, numeric, text, hedge, symbolic).

    When the gold is one number and nothing else is committed, a number that ends the text after
    "is"/"it's" (``...which is 1,000.99€``) is the answer (:func:`rlvr_gym.verifiers.math.extract.final_number`;
    never a hedge or a list; off in ``strict`` mode). ``precision`` (decimal places, default 6) is
    the fewest places a written decimal needs to stand for an exact value it rounds or truncates
    to (``precision=2``: ``0.33`` for ``\\frac{1}{3}``); see :mod:`rlvr_gym.verifiers.math.exactness`.

    ``question_key``: the task field holding the question. An answer that is the question's own
    expression copied back ("Evaluate $(1+2i)6-3i$." answered ``(1+2i)6-3i``, equal to the gold
    ``6+9i`` by construction) is refused as ``wrong_answer``; see
    :mod:`rlvr_gym.verifiers.math.copied`. The question written out verbatim is cut out before
    extraction: "What is $\\sqrt{53}$ in simplest radical form?" echoed has no answer, though
    its math is the gold.
    """

    def __init__(
        self,
        answer_key: str = "answer",
        *,
        last_number_fallback: bool = False,
        last_math_fallback: bool = False,
        strict: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        memory_mb: int = DEFAULT_MEMORY_MB,
        precision: int = MIN_PLACES,
        question_key: str | None = None,
    ) -> None:
        if not isinstance(answer_key, str) or not answer_key:
            raise InvalidArgumentError(f"answer_key must be a non-empty string, got {answer_key!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 60:
            raise InvalidArgumentError(f"timeout must be in (0, 60] seconds, got {timeout!r}")
        if question_key is not None and (not isinstance(question_key, str) or not question_key):
            raise InvalidArgumentError(f"question_key must be a non-empty string or None, got {question_key!r}")
        self.answer_key = answer_key
        self.question_key = question_key
        self.last_number_fallback = bool(last_number_fallback)
        self.strict = bool(strict)
        self.last_math_fallback = bool(last_math_fallback)
        self.timeout = float(timeout)
        self.precision = check_precision(precision)
        self.memory_mb = memory_mb
        self._worker: Worker | None = None
        self.worker.spawn()  # a head start: sympy's import runs while the first answers are numbers

    @property
    def worker(self) -> Worker:
        """The (shared) budgeted worker; started on first symbolic use or by :meth:`warm_up`."""
        if self._worker is None:
            self._worker = shared_worker(equivalence.WORKER_TARGET, self.memory_mb)
        return self._worker

    def close(self) -> None:
        """Stop the worker processes (shared with other math verifiers; they restart on demand)."""
        if self._worker is not None:
            self._worker.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the settings, not the worker: a process and its pipes stay in their process."""
        return {**self.__dict__, "_worker": None}

    def warm_up(self) -> None:
        """Start the worker now, so the first symbolic check does not pay the start-up."""
        self.worker.start()

    def __call__(self, completion: str, task: Task) -> Verdict:
        gold = task[self.answer_key]
        if not isinstance(gold, str | int):
            raise InvalidTypeError(f"task[{self.answer_key!r}] must be a str or int, got {type(gold).__name__}")
        if len(completion) > MAX_COMPLETION_CHARS:
            return Verdict.fail(
                Reason.BAD_FORMAT, why=f"completion longer than {MAX_COMPLETION_CHARS} characters"
            )
        question = task.get(self.question_key) if self.question_key else None
        if not isinstance(question, str):
            question = None
        elif len(question.strip()) >= MIN_ECHOED_QUESTION and question in completion:
            completion = completion.replace(question, "\n")  # the question echoed is not the answer
        answer = extract_answer(
            completion,
            last_number_fallback=self.last_number_fallback,
            last_math_fallback=self.last_math_fallback,
            strict=self.strict,
        )
        gold_text = reference_answer(str(gold))
        if (answer is None or not answer.strip()) and not self.strict and _one_number(gold_text):
            answer = final_number(completion)
        if answer is None or not answer.strip():
            return Verdict.fail(Reason.NO_ANSWER)
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.fail(
                Reason.BAD_FORMAT, answer[:80], why=f"answer longer than {MAX_ANSWER_CHARS} chars"
            )
        if question is not None and copied_from_question(answer, question, gold_text):
            return Verdict.fail(
                Reason.WRONG_ANSWER, answer, path="copied", why="the question's expression copied, not worked out"
            )
        result = equivalence.check(
            gold_text, answer, timeout=self.timeout, worker=self.worker, precision=self.precision
        )
        if result.status == equivalence.EQUAL:
            return Verdict.correct(answer, path=result.path)
        if result.status == equivalence.ERROR:
            raise RunFailedError(f"symbolic worker failed: {result.why}")
        return Verdict.fail(_REASONS[result.status], answer, path=result.path, why=result.why)

    def __repr__(self) -> str:
        return (
            f"MathVerifier(answer_key={self.answer_key!r}, last_number_fallback={self.last_number_fallback}, "
            f"strict={self.strict}, "
            f"timeout={self.timeout:g}, precision={self.precision})"
        )


def _one_number(gold: str) -> bool:
    """The gold is a single plain number (``1000.99``, ``1.000,99``, ``\\frac{3}{4}``)."""
    norm = normalize(gold)
    return fast_number(norm) is not None or decimal_comma(norm, lists=True) is not None
