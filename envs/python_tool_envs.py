"""``gsm8k-python`` and ``math500-python``: compute with a sandboxed ``run_python``, then answer.

The tasks are GSM8K's and MATH-500's; the score is the math verifier's on the final answer only
(given as a ``submit_answer`` call or as a message without a tool call). What the model printed
with ``run_python`` is never read as an answer, so computing the answer is not answering it.
There is no format component: the tool protocol is the format.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rlvr_gym.envs.gsm8k import GSM8KBase
from rlvr_gym.envs.math500 import MATH500Base
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


class PythonToolEnv(MultiTurnEnv):
    """A multi-turn env with the sandbox as its ``run_python`` tool and a ``submit_answer`` tool."""

    default_system_prompt: ClassVar[str | None] = TOOL_PROMPT
    default_max_turns: ClassVar[int] = 5

    def __init__(
        self,
        *,
        tool_limits: Limits | None = None,
        pool: SandboxPool | None = None,
        restricted: bool = True,
        **env_options: Any,
    ) -> None:
        super().__init__(**env_options)
        self.python = PythonTool(limits=tool_limits, pool=pool, restricted=restricted)

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


class GSM8KPythonEnv(PythonToolEnv, GSM8KBase):
    """GSM8K with a sandboxed Python tool; scored on the final answer by the math verifier."""

    def __init__(self, *, timeout: float = 3.0, strict_answer: bool = False, **options: Any) -> None:
        super().__init__(timeout=timeout, strict_answer=strict_answer, **options)
        self.rubric = correctness_rubric(timeout=timeout, strict=strict_answer, question_key="question")


class MATH500PythonEnv(PythonToolEnv, MATH500Base):
    """MATH-500 with a sandboxed Python tool; symbolic answers checked by the math verifier."""

    def __init__(self, *, timeout: float = 3.0, strict_answer: bool = False, **options: Any) -> None:
        super().__init__(timeout=timeout, strict_answer=strict_answer, **options)
        self.rubric = correctness_rubric(timeout=timeout, strict=strict_answer, question_key="problem")
