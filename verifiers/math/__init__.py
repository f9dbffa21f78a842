"""Math answers: extraction, normalization, a safe parser, and budgeted sympy equivalence.

Importing this package does not import sympy: plain numbers are settled in the caller, and
:mod:`rlvr_gym.verifiers.math.parse` / :mod:`rlvr_gym.verifiers.math.symbolic` run in the budgeted worker.
"""

from rlvr_gym.verifiers.math.budget import Worker, shared_worker
from rlvr_gym.verifiers.math.equivalence import Equivalence, check
from rlvr_gym.verifiers.math.extract import MAX_ANSWER_CHARS, extract_answer, find_boxed
from rlvr_gym.verifiers.math.normalize import fast_number, normalize
from rlvr_gym.verifiers.math.verifier import MathVerifier

__all__ = [
    "MAX_ANSWER_CHARS",
    "Equivalence",
    "MathVerifier",
    "Worker",
    "check",
    "extract_answer",
    "fast_number",
    "find_boxed",
    "normalize",
    "shared_worker",
]
