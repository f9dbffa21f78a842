"""``CodeVerifier``: run the program in a completion against the task's tests, in the sandbox.

The score is the fraction of test cases passed; ``passed`` means all of them. Reasons:
``no_answer`` (no program found), ``bad_format`` (it does not parse), ``unsafe`` (the policy
refused it), ``timeout`` (the wall-clock budget ran out; score = cases passed before that),
``wrong_answer`` (some case failed), ``error`` (a malformed task or a broken worker: our bug).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.code.extract import extract_code
from rlvr_gym.verifiers.code.pool import SandboxPool, default_pool
from rlvr_gym.verifiers.code.sandbox import Limits
from rlvr_gym.verifiers.protocol import Task, completion_text
from rlvr_gym.verifiers.verdict import Reason, Verdict


class CodeVerifier:
    """Verifier for code tasks: ``task[tests_key]`` holds the tests (see :mod:`rlvr_gym.verifiers.code.harness`).

    Use :meth:`verify_batch` for many completions: it spreads them over the pool's workers.
    ``restricted=False`` skips the RestrictedPython layer (for testing the OS layers alone).
    ``reveal_tests=True`` lets verdict details quote expected values and the test code's own
    failure messages; by default they say only which case failed and what the submission did,
    since details reach rollout logs and, in some setups, the model.
    """

    def __init__(
        self,
        tests_key: str = "tests",
        *,
        limits: Limits | None = None,
        pool: SandboxPool | None = None,
        restricted: bool = True,
        reveal_tests: bool = False,
    ) -> None:
        self.tests_key = tests_key
        self.reveal_tests = reveal_tests
        self.limits = limits or Limits()
        self._limits: tuple[Limits, dict[str, Any]] | None = None
        self._pool = pool
        self.restricted = restricted

    @property
    def pool(self) -> SandboxPool:
        return self._pool if self._pool is not None else default_pool()

    def __call__(self, completion: str, task: Task) -> Verdict:
        return self.verify_batch([completion], [task])[0]

    def close(self) -> None:
        """Stop the pool's worker processes; they restart on the next verification."""
        pool = self._pool if self._pool is not None else default_pool()
        pool.release()

    def _limits_dict(self) -> dict[str, Any]:
        """``self.limits`` as the job sends it, made once per ``Limits`` (``asdict`` copies
        deeply: ~10 µs a job, in the host)."""
        if self._limits is None or self._limits[0] is not self.limits:
            self._limits = (self.limits, asdict(self.limits))
        return self._limits[1]

    def _job(self, code: str, task: Task) -> dict[str, Any]:
        return {
            "source": code,
            "tests": task[self.tests_key],
            "limits": self._limits_dict(),
            "restricted": self.restricted,
            "reveal_tests": self.reveal_tests,
        }

    def verify_batch(self, completions: Sequence[object], tasks: Sequence[Task]) -> list[Verdict]:
        """One Verdict per (completion, task) pair, run in parallel on the pool."""
        if len(completions) != len(tasks):
            raise InvalidArgumentError(f"verify_batch got {len(completions)} completions for {len(tasks)} tasks")
        verdicts: list[Verdict | None] = [None] * len(tasks)
        jobs, where, codes = [], [], []
        for index, (completion, task) in enumerate(zip(completions, tasks, strict=True)):
            text = completion_text(completion)
            if text is None:
                verdicts[index] = Verdict.fail(
                    Reason.BAD_FORMAT, why=f"completion is {type(completion).__name__}, not text"
                )
                continue
            tests = task.get(self.tests_key)
            if (
                isinstance(tests, Mapping) and tests.get("kind") == "run"
            ):  # compares nothing: every program passes
                verdicts[index] = Verdict.fail(
                    Reason.ERROR, error="tests of kind 'run' are the run_python tool's, they check nothing"
                )
                continue
            code = extract_code(text, _entry_point(tests))
            if code is None:
                verdicts[index] = Verdict.fail(Reason.NO_ANSWER, why="no Python program found")
                continue
            jobs.append(self._job(code, task))
            where.append(index)
            codes.append(code)
        for index, code, outcome in zip(where, codes, self.pool.run(jobs), strict=True):
            verdicts[index] = verdict_of(outcome, code)
        return [v for v in verdicts if v is not None]

    def __repr__(self) -> str:
        return (
            f"CodeVerifier(tests_key={self.tests_key!r}, limits={self.limits}, restricted={self.restricted}, "
            f"reveal_tests={self.reveal_tests})"
        )


def _entry_point(tests: object) -> str | None:
    if isinstance(tests, Mapping):
        name = tests.get("entry_point") or tests.get("fn")
        return name if isinstance(name, str) else None
    return None


def verdict_of(outcome: Mapping[str, Any], code: str) -> Verdict:
    """Turn a worker's outcome into a Verdict (details hold only deterministic facts)."""
    status = outcome.get("status")
    if status == "unsafe":
        return Verdict.fail(Reason.UNSAFE, code, why=list(outcome.get("errors", [])))
    if status == "syntax":
        return Verdict.fail(Reason.BAD_FORMAT, code, why=list(outcome.get("errors", [])))
    if status != "ran":
        return Verdict.fail(
            Reason.ERROR, code, error="; ".join(outcome.get("errors", ["unknown worker status"]))
        )
    passed, total = int(outcome["passed"]), int(outcome["total"])
    details = {"tests_passed": passed, "tests_total": total}
    if outcome.get("load_error"):
        details["load_error"] = outcome["load_error"]
    if outcome.get("failures"):
        details["failures"] = list(outcome["failures"])
    if total and passed == total and not outcome.get("timed_out"):
        return Verdict.correct(code, **details)
    score = passed / total if total else 0.0
    reason = Reason.TIMEOUT if outcome.get("timed_out") else Reason.WRONG_ANSWER
    return Verdict.fail(reason, code, score=min(score, 0.999999), **details)
