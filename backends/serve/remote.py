"""Train on a served env from another process: a TRL ``environment_factory`` over OpenEnv's client.

The pattern of TRL's OpenEnv docs — an env class whose instances each hold a client session, and a
reward function that reads them — with ``rlvr-gym serve`` on the other end::

    from rlvr_gym.backends.serve.remote import remote_env, remote_reward
    from rlvr_gym.backends.trl_adapter import dataset

    RemoteArith = remote_env("http://127.0.0.1:8000/arith")
    trainer = GRPOTrainer(
        model=...,
        train_dataset=dataset(envs.make("arith"), "train"),  # prompts + task_split/task_index columns
        environment_factory=RemoteArith,
        reward_funcs=[remote_reward],
        args=GRPOConfig(...),
    )

``reset`` poses the row's task on the server (``task_split``/``task_index``: the group shares
it); ``remote_reward`` sends each rollout's final completion as the session's step and returns
the server's verdict score (``None``: unscored, which TRL leaves out). Every session speaks
OpenEnv's own ``GenericEnvClient`` over WebSocket. The class has no public method besides
``reset``: TRL would offer any other one to the model as a tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlvr_gym.error import InvalidArgumentError, NotAvailableError


def _final_message(completion: object) -> dict[str, Any]:
    """The last assistant message of a conversational completion, or the text as one."""
    if isinstance(completion, str):
        return {"role": "assistant", "content": completion}
    if isinstance(completion, Sequence):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role") == "assistant":
                return message
    raise InvalidArgumentError(f"a completion is text or chat messages, got {type(completion).__name__}")


def remote_env(base_url: str, *, message_timeout_s: float = 120.0) -> type:
    """A class for TRL's ``environment_factory``: each instance is one session on ``base_url``
    (an env's URL on ``rlvr-gym serve``, e.g. ``http://127.0.0.1:8000/gsm8k``)."""
    try:
        from openenv.core import GenericEnvClient
    except ImportError:
        raise NotAvailableError("the remote env needs OpenEnv's client: pip install 'rlvr-gym[openenv]'") from None

    class RemoteEnv:
        """One rollout's session on the server (see :mod:`rlvr_gym.backends.serve.remote`)."""

        url = base_url

        def __init__(self) -> None:
            self._client = GenericEnvClient(base_url=base_url, message_timeout_s=message_timeout_s).sync()
            self._observation: dict[str, Any] = {}
            self._reward: float | None = None
            self._done = False

        def reset(self, task_split: str | None = None, task_index: int | None = None, **row: Any) -> None:
            """Pose the row's task on the server; the prompt is already the dataset's (returns None)."""
            result = self._client.reset(split=task_split, index=task_index)
            self._observation, self._reward, self._done = result.observation, None, False

        def _finish(self, completion: object) -> float | None:
            """Send the rollout's final message as the step; the server's score (None: unscored)."""
            if not self._done:
                message = _final_message(completion)
                result = self._client.step({"message": {k: v for k, v in message.items() if k != "role"}})
                self._observation, self._done = result.observation, bool(result.done)
                self._reward = result.reward
            return self._reward

    return RemoteEnv


def remote_reward(completions: Sequence[object], environments: Sequence[Any], **_: Any) -> list[float | None]:
    """TRL reward function: each rollout's completion scored by its session on the server."""
    return [env._finish(completion) for completion, env in zip(completions, environments, strict=True)]


__all__ = ["remote_env", "remote_reward"]
