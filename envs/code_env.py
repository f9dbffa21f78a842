"""CodeEnv: the shared part of code envs — the prompt contract and the code verifier.

Concrete envs (``humaneval``, ``mbpp``) only load tasks and put their tests in ``task["tests"]``
in one of the harness's kinds (``assert``, ``calls``, ``stdio``). Batches need nothing here: the
rubric's batch path hands them to :meth:`CodeVerifier.verify_batch`, which runs them on the pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rlvr_gym.envs.config import EnvConfig, configure, knob
from rlvr_gym.envs.env import Env
from rlvr_gym.verifiers import CodeVerifier, Limits, Rubric, SandboxPool, Task

FENCE_INSTRUCTION = "Reply with the complete Python program in a single ```python fenced code block."


def fenced(code: str, language: str = "python") -> str:
    """``code`` in a fenced block, as a completion would give it."""
    return f"```{language}\n{code.rstrip()}\n```"


def code_question(text: str, tests: Mapping[str, Any]) -> str:
    """A coding task's question: ``text``, then what the tests ask of the code (the asserts
    themselves, the function's name with one call, or one stdin/stdout pair), then the fence
    instruction. MBPP and a user's own coding data pose their tasks this one way."""
    if tests["kind"] == "assert":
        contract = f"Your code should pass these tests:\n\n{fenced(chr(10).join(tests['cases']))}"
    elif tests["kind"] == "calls":
        case = tests["cases"][0]
        arguments = ", ".join(map(repr, case.get("args", [])))
        contract = f"Name the function `{tests['fn']}`. Example: `{tests['fn']}({arguments})` returns `{case['expected']!r}`."
    else:
        case = tests["cases"][0]
        contract = f"Example input:\n{fenced(case.get('stdin', ''), '')}\nExpected output:\n{fenced(case['stdout'], '')}"
    return f"{text}\n\n{contract}\n\n{FENCE_INSTRUCTION}"


@dataclass(frozen=True)
class CodeConfig(EnvConfig):
    """The knobs of every code env: the sandbox a submission runs in, and what verdicts reveal."""

    limits: Limits | None = knob(
        None, "per-submission limits: wall_s, cpu_s, memory_bytes, ... (none: Limits())"
    )
    pool: SandboxPool | None = knob(
        None, "a sandbox pool to share (none: the env's own); an object, not recorded"
    )
    restricted: bool = knob(True, "compile with RestrictedPython first (a first filter, not the wall)")
    reveal_tests: bool = knob(False, "verdict details quote expected values and the tests' messages")


class CodeEnv(Env):
    """Base for envs whose completions are Python programs scored by :class:`CodeVerifier`
    (no turn protocol: a concrete code env adds ``SingleTurnEnv`` or ``MultiTurnEnv``)."""

    default_system_prompt: ClassVar[str | None] = (
        "You are an expert Python programmer. Think briefly, then answer with code only in one "
        "```python fenced block. Use only the standard library."
    )
    config_class: ClassVar[type[CodeConfig]] = CodeConfig

    def __init__(self, config: CodeConfig | None = None, /, **knobs: Any) -> None:
        config = configure(self, config, knobs)
        super().__init__(**config.env_options())
        self.verifier = CodeVerifier(
            "tests",
            limits=config.limits,
            pool=config.pool,
            restricted=config.restricted,
            reveal_tests=config.reveal_tests,
        )
        self.rubric = Rubric({"correct": self.verifier})

    def wrong_completions(self, task: Task) -> list[str]:
        return [*super().wrong_completions(task), fenced("def broken(:\n    pass")]
