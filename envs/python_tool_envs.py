"""``gsm8k-python`` and ``math500-python``: compute with a sandboxed ``run_python``, then answer.

The tasks are GSM8K's and MATH-500's; the score is the math verifier's on the final answer only
(given as a ``submit_answer`` call or as a message without a tool call). What the model printed
with ``run_python`` is never read as an answer, so computing the answer is not answering it.
There is no format component: the tool protocol is the format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from rlvr_gym.envs.config import ToolEnvConfig, configure, knob
from rlvr_gym.envs.gsm8k import GSM8KBase, GSM8KConfig
from rlvr_gym.envs.math500 import MATH500Base, MATH500Config
from rlvr_gym.envs.tool_env import Final, MultiTurnEnv, tool
from rlvr_gym.verifiers import Limits, Rubric, SandboxPool, SingleAnswer, Task
from rlvr_gym.verifiers.code.tool import PythonTool
from rlvr_gym.verifiers.math import MathVerifier

TOOL_PROMPT = (
    "Solve the problem. You may call the run_python tool to compute: it runs a short Python "
    "program (a few standard-library modules such as math, fractions and itertools; no "
    "files or network) and returns what it printed; each call starts fresh. When you are done, call submit_answer with the final answer "
    "alone, or reply with the final answer inside <answer></answer>."
)


@dataclass(frozen=True)
class PythonToolConfig(ToolEnvConfig):
    """The knobs of an env with the ``run_python`` tool: its sandbox."""

    tool_limits: Limits | None = knob(None, "run_python's limits per call (none: the tool's own)")
    pool: SandboxPool | None = knob(
        None, "a sandbox pool to share (none: the tool's own); an object, not recorded"
    )
    restricted: bool = knob(True, "compile with RestrictedPython first (a first filter, not the wall)")


class PythonToolEnv(MultiTurnEnv):
    """A multi-turn env with the sandbox as its ``run_python`` tool and a ``submit_answer`` tool."""

    default_system_prompt: ClassVar[str | None] = TOOL_PROMPT
    default_max_turns: ClassVar[int] = 5
    config_class: ClassVar[type[PythonToolConfig]] = PythonToolConfig

    def __init__(self, config: PythonToolConfig | None = None, /, **knobs: Any) -> None:
        config = configure(self, config, knobs)
        super().__init__(**config.tool_options(), **config.env_options())
        self.python = PythonTool(limits=config.tool_limits, pool=config.pool, restricted=config.restricted)

    @tool
    def run_python(self, code: str) -> str:
        """Run a Python program in a sandbox and return what it printed.

        Args:
            code: A complete Python program. Print every value you want to see.

        Returns:
            The program's output, or the error that stopped it.
        """
        result = self.python.run(code)
        self.note(status=result.status)
        if result.status == "sandbox_error":
            self.note(infra_error=result.error)
        return result.render()

    @tool
    def submit_answer(self, answer: str) -> str:
        """Submit the final answer; this ends the episode.

        Args:
            answer: The final answer alone, e.g. 42 or \\frac{3}{4}.

        Returns:
            A confirmation.
        """
        _, _, task = self._posed()
        return Final(self.verify(f"<answer>{answer}</answer>", task), "Answer submitted.")  # type: ignore[return-value]

    def reference_episode(self, task: Task) -> list[dict[str, Any]]:
        """Print the answer with ``run_python``, then give it as a final plain message."""
        code = f"print({json.dumps(str(task['answer']))})"
        final = {"role": "assistant", "content": f"<answer>{task['answer']}</answer>"}
        return [self.tool_call("run_python", code=code), final]

    def close(self) -> None:
        self.python.close()
        super().close()


def correctness_rubric(**math_options: Any) -> Rubric:
    """The math verifier on the final answer, nothing else."""
    return Rubric({"correct": SingleAnswer(MathVerifier(**math_options))})


@dataclass(frozen=True)
class GSM8KPythonConfig(PythonToolConfig, GSM8KConfig):
    """``gsm8k-python``'s knobs: the Python tool's and GSM8K's (whose ``format_weight`` and
    ``last_number_fallback`` do nothing here: the tool protocol is the format)."""


class GSM8KPythonEnv(PythonToolEnv, GSM8KBase):
    """GSM8K with a sandboxed Python tool; scored on the final answer by the math verifier."""

    config_class: ClassVar[type[GSM8KPythonConfig]] = GSM8KPythonConfig

    env_config: GSM8KPythonConfig

    def __init__(self, config: GSM8KPythonConfig | None = None, /, **knobs: Any) -> None:
        super().__init__(config, **knobs)
        config = self.env_config
        self.rubric = correctness_rubric(
            timeout=config.timeout, strict=config.strict_answer, question_key="question"
        )


@dataclass(frozen=True)
class MATH500PythonConfig(PythonToolConfig, MATH500Config):
    """``math500-python``'s knobs: the Python tool's and MATH-500's (whose ``format_weight`` and
    ``last_math_fallback`` do nothing here: the tool protocol is the format)."""


class MATH500PythonEnv(PythonToolEnv, MATH500Base):
    """MATH-500 with a sandboxed Python tool; symbolic answers checked by the math verifier."""

    config_class: ClassVar[type[MATH500PythonConfig]] = MATH500PythonConfig

    env_config: MATH500PythonConfig

    def __init__(self, config: MATH500PythonConfig | None = None, /, **knobs: Any) -> None:
        super().__init__(config, **knobs)
        config = self.env_config
        self.rubric = correctness_rubric(
            timeout=config.timeout, strict=config.strict_answer, question_key="problem"
        )
