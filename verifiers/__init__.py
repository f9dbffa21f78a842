"""Verifiers: score a completion against a task, returning a :class:`Verdict` — never raising."""

from verifiers.basic import ExactMatch, NumberMatch, extract_answer, parse_number
from verifiers.code import CodeVerifier, Limits, SandboxPool, extract_code
from verifiers.format import IntegerAnswer, LengthBand, NumericProximity, TagFormat
from verifiers.math import MathVerifier
from verifiers.protocol import Completion, Task, Verifier, completion_text, run_verifier
from verifiers.rubric import Rubric
from verifiers.verdict import Reason, Verdict

__all__ = [
    "CodeVerifier",
    "Completion",
    "ExactMatch",
    "IntegerAnswer",
    "LengthBand",
    "MathVerifier",
    "Limits",
    "NumberMatch",
    "NumericProximity",
    "Reason",
    "Rubric",
    "TagFormat",
    "SandboxPool",
    "Task",
    "Verdict",
    "Verifier",
    "completion_text",
    "extract_answer",
    "extract_code",
    "parse_number",
    "run_verifier",
]
