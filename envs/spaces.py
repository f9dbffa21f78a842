"""Gymnasium spaces for text: any Unicode string, and a list of chat messages.

``gymnasium.spaces.Text`` only admits a fixed alphabet, which a real prompt or completion never
fits, so these accept any text and bound only its length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from rlvr_gym.error import InvalidArgumentError

ROLES = ("system", "user", "assistant")
TOOL_ROLES = (*ROLES, "tool")
"""Roles of a tool-use conversation (:class:`rlvr_gym.envs.tool_env.MultiTurnEnv`)."""
_SAMPLE_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 +-*/=.,?<>\n"


class AnyText(spaces.Space[str]):
    """Any ``str`` of at most ``max_length`` characters (``None``: unbounded)."""

    def __init__(self, max_length: int | None = None, seed: int | None = None) -> None:
        if max_length is not None and max_length < 1:
            raise InvalidArgumentError(f"max_length must be >= 1 or None, got {max_length}")
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        length = int(self.np_random.integers(0, min(self.max_length or 64, 64) + 1))
        chars = self.np_random.choice(np.array(list(_SAMPLE_ALPHABET)), size=length)
        return "".join(chars.tolist())

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and (self.max_length is None or len(x) <= self.max_length)

    def __repr__(self) -> str:
        return f"AnyText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length


class ChatMessages(spaces.Space[list]):
    """A non-empty list of ``{"role": ..., "content": str}`` messages, as chat templates take.

    ``tools=True`` also admits ``tool`` messages (and ``tool_calls`` on assistant messages).
    """

    def __init__(
        self, max_length: int | None = None, seed: int | None = None, *, tools: bool = False
    ) -> None:
        self.text = AnyText(max_length)
        self.tools = tools
        self.roles = TOOL_ROLES if tools else ROLES
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.text.sample()}]

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, Sequence)
            and not isinstance(x, str)
            and len(x) > 0
            and all(
                isinstance(m, Mapping)
                and m.get("role") in self.roles
                and self.text.contains(m.get("content"))
                for m in x
            )
        )

    def __repr__(self) -> str:
        return f"ChatMessages(max_length={self.text.max_length}, tools={self.tools})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatMessages) and other.text == self.text and other.tools == self.tools
