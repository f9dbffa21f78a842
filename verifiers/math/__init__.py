"""Math answers: extraction, normalisation, a safe parser, and budgeted sympy equivalence."""

from verifiers.math.budget import Worker, shared_worker
from verifiers.math.equivalence import Equivalence, check
from verifiers.math.extract import MAX_ANSWER_CHARS, extract_answer, find_boxed
from verifiers.math.normalize import fast_number, normalize
from verifiers.math.parse import ParseError, TooLarge, parse
from verifiers.math.verifier import MathVerifier

__all__ = [
    "MAX_ANSWER_CHARS",
    "Equivalence",
    "MathVerifier",
    "ParseError",
    "TooLarge",
    "Worker",
    "check",
    "extract_answer",
    "fast_number",
    "find_boxed",
    "normalize",
    "parse",
    "shared_worker",
]
