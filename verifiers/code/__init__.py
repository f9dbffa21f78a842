"""Code execution verifier: model programs run against tests in a layered sandbox.

Layers: :mod:`.policy` (RestrictedPython filter), :mod:`.sandbox` (a locked-down process per
submission), :mod:`.harness` (the judge, outside the submission's reach). :mod:`.pool` keeps one
warm worker per core; :class:`CodeVerifier` is the verifier envs use.
"""

from rlvr_gym.verifiers.code.extract import extract_code
from rlvr_gym.verifiers.code.harness import KINDS, InvalidTestsError, same_value
from rlvr_gym.verifiers.code.policy import ALLOWED_IMPORTS, compile_submission
from rlvr_gym.verifiers.code.pool import SandboxPool, default_pool
from rlvr_gym.verifiers.code.sandbox import Limits
from rlvr_gym.verifiers.code.verifier import CodeVerifier, verdict_of

__all__ = [
    "ALLOWED_IMPORTS",
    "KINDS",
    "CodeVerifier",
    "InvalidTestsError",
    "Limits",
    "SandboxPool",
    "compile_submission",
    "default_pool",
    "extract_code",
    "same_value",
    "verdict_of",
]
