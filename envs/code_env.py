"""CodeEnv: the shared part of code envs — the prompt contract, the code verifier, batch scoring.

Concrete envs (``humaneval``, ``mbpp``) only load tasks and put their tests in ``task["tests"]``
in one of the harness's kinds (``assert``, ``calls``, ``stdio``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.error import InvalidArgument
from rlvr_gym.verifiers import CodeVerifier, Limits, Rubric, SandboxPool, Task, Verdict, completion_text

FENCE_INSTRUCTION = "Reply with the complete Python program in a single ```python fenced code block."


def fenced(code: str, language: str = "python") -> str:
    """``code`` in a fenced block, as a completion would give it."""
    return f"```{language}\n{code.rstrip()}\n```"


class CodeEnv(SingleTurnEnv):
    """Base for envs whose completions are Python programs scored by :class:`CodeVerifier`."""

    default_system_prompt: ClassVar[str | None] = (
        "You are an expert Python programmer. Think briefly, then answer with code only in one "
        "```python fenced block. Use only the standard library."
    )

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        pool: SandboxPool | None = None,
        restricted: bool = True,
        **env_options: Any,
    ) -> None:
        super().__init__(**env_options)
        self.verifier = CodeVerifier("tests", limits=limits, pool=pool, restricted=restricted)
        self.rubric = Rubric({"correct": self.verifier})

    def verify_batch(self, completions: Sequence[object], tasks: Sequence[Task]) -> list[Verdict]:
        """Like ``verify`` for each pair, but all text completions run in parallel on the pool."""
        if len(completions) != len(tasks):
            raise InvalidArgument(f"verify_batch got {len(completions)} completions for {len(tasks)} tasks")
        texts = [(i, text) for i, c in enumerate(completions) if (text := completion_text(c)) is not None]
        try:
            batch = self.verifier.verify_batch([t for _, t in texts], [tasks[i] for i, _ in texts])
        except Exception:  # noqa: BLE001 - a verifier bug: let verify() turn it into error verdicts
            return [self.verify(c, t) for c, t in zip(completions, tasks, strict=True)]
        scored = {i: self.rubric.combine({"correct": v}) for (i, _), v in zip(texts, batch, strict=True)}
        return [
            scored[i] if i in scored else self.verify(c, t)
            for i, (c, t) in enumerate(zip(completions, tasks, strict=True))
        ]

    def wrong_completions(self, task: Task) -> list[str]:
        return [*super().wrong_completions(task), fenced("def broken(:\n    pass")]
