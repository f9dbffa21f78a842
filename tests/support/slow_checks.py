"""A verifier that a completion can make slow, for the scorers' "one item costs only itself" tests.

At module level (not in a test file), so a scorer's worker process and a Ray actor can load it.
"""

from __future__ import annotations

import re

from rlvr_gym.verifiers import NumberMatch, Reason, Verdict

REGEX_BOMB = "a" * 27 + "!"
"""~11 s of backtracking in :attr:`HostileToItsChecks.runs`, with the GIL held (about 2x per ``a``)."""
LOOP_BOMB = "loop:" + "x" * 20
"""~10 s of bytecode in :class:`HostileToItsChecks`."""


class HostileToItsChecks:
    """NumberMatch behind two checks that a completion can make slow (below the size cap): a
    format regex that backtracks 2^n on ``"a" * n + "!"`` (C code holding the GIL: no thread or
    signal of the process can stop it) and a pure-Python loop as long as a ``loop:`` completion.
    Module level, so the scorer's worker process can load it."""

    runs = re.compile(r"(a+)+$")

    def __init__(self) -> None:
        self.inner = NumberMatch("answer")

    def __call__(self, completion, task):
        if self.runs.match(completion):
            return Verdict.fail(Reason.BAD_FORMAT)
        if completion.startswith("loop:"):
            spins = 0
            while spins < len(completion) * 10_000_000:
                spins += 1
        return self.inner(completion, task)
