"""Verifiers: score a completion against a task, returning a :class:`Verdict` — never raising.

The code verifier's names (``CodeVerifier``, ``Limits``, ``SandboxPool``, ``extract_code``) are
imported on first use, so envs that score text or math never load the sandbox (nor
RestrictedPython); nothing here imports sympy (the math worker does, in its own process).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlvr_gym.verifiers.basic import ExactMatch, NumberMatch, extract_answer, parse_number, strip_markup
from rlvr_gym.verifiers.format import IntegerAnswer, LengthBand, NumericProximity, TagFormat
from rlvr_gym.verifiers.frozen import FrozenDict, freeze, thaw
from rlvr_gym.verifiers.math import MathVerifier
from rlvr_gym.verifiers.protocol import (
    BatchVerifier,
    Completion,
    Task,
    Verifier,
    completion_text,
    run_verifier,
    run_verifier_batch,
)
from rlvr_gym.verifiers.rubric import Rubric
from rlvr_gym.verifiers.single_answer import SingleAnswer
from rlvr_gym.verifiers.verdict import Reason, Verdict

_CODE_NAMES = ("CodeVerifier", "Limits", "SandboxPool", "extract_code")

if TYPE_CHECKING:
    from rlvr_gym.verifiers.code import CodeVerifier, Limits, SandboxPool, extract_code


def __getattr__(name: str) -> Any:
    if name in _CODE_NAMES:
        value = getattr(importlib.import_module("rlvr_gym.verifiers.code"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rlvr_gym.verifiers' has no attribute {name!r}")


__all__ = [
    "BatchVerifier",
    "CodeVerifier",
    "Completion",
    "ExactMatch",
    "FrozenDict",
    "IntegerAnswer",
    "LengthBand",
    "Limits",
    "MathVerifier",
    "NumberMatch",
    "NumericProximity",
    "Reason",
    "Rubric",
    "SandboxPool",
    "SingleAnswer",
    "TagFormat",
    "Task",
    "Verdict",
    "Verifier",
    "completion_text",
    "extract_answer",
    "extract_code",
    "freeze",
    "parse_number",
    "run_verifier",
    "run_verifier_batch",
    "strip_markup",
    "thaw",
]
