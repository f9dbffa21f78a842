"""Any env as a skyrl-gym ``BaseTextEnv`` (``pip install skyrl-gym==0.4.0``).

:func:`register` adds it to skyrl-gym's registry as ``rlvr_gym``; SkyRL then builds one per
trajectory with ``skyrl_gym.make("rlvr_gym", env_config=..., extras=row)``::

    env_config = {"env_id": "gsm8k-python", "env_kwargs": {"max_turns": 3}}
    extras = {"reward_spec": {"ground_truth": {"split": "train", "index": 7}}}   # the row's label

``init(prompt)`` poses the task; ``step(action)`` plays one assistant turn: a single-step env
scores it and ends, a tool env runs the ``<tool_call>`` blocks in the sandbox and returns the tool
messages as ``observations`` until a final answer or the turn limit. ``reward`` is the
verdict's score; ``metadata`` carries the verdict.
"""

from __future__ import annotations

from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from rlvr_gym.backends.peers import shared_env
from rlvr_gym.backends.task_labels import locate, task_of
from rlvr_gym.envs import EnvStateError, MultiTurnEnv
from rlvr_gym.error import InvalidArgumentError

ENV_CLASS = "rlvr_gym"


class RlvrTextEnv(BaseTextEnv):
    """One trajectory of an rlvr-gym env, in skyrl-gym's text-in/text-out API."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        config = dict(env_config or {})
        extras = dict(extras or {})
        env_id = config.get("env_id") or extras.get("env_id") or extras.get("data_source")
        if not env_id:
            raise InvalidArgumentError(
                "give the env as env_config['env_id'] (or the row's 'env_id' / 'data_source')"
            )
        shared = shared_env(env_id, dict(config.get("env_kwargs") or {}))
        label = (extras.get("reward_spec") or {}).get("ground_truth", extras.get("label"))
        if label is None:
            raise InvalidArgumentError("the row needs its task label in extras['reward_spec']['ground_truth']")
        split = (extras.get("extra_info") or {}).get("split")
        self.task = task_of(shared, label, split)
        self.where = locate(shared, label, split)
        # A tool env's episode state is per trajectory: a spawn() of the shared env (tasks, rubric
        # and sandbox pool shared); a single-step env is only asked to verify.
        self.env = shared.spawn() if isinstance(shared, MultiTurnEnv) else shared
        if isinstance(self.env, MultiTurnEnv) and self.where is None:
            raise InvalidArgumentError("a tool env plays only tasks it holds: label the row {'split', 'index'}")
        self.max_turns = self.env.max_turns if isinstance(self.env, MultiTurnEnv) else 1
        self._messages: list[dict[str, Any]] = []
        self._done = False

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Pose the task; the row's prompt stands (the env's own prompt when the row has none)."""
        if isinstance(self.env, MultiTurnEnv) and self.where is not None:
            obs, _ = self.env.reset(options={"split": self.where[0], "index": self.where[1]})
            self._messages = list(obs)
        tools = self.env.tool_schemas() if isinstance(self.env, MultiTurnEnv) else []
        return (prompt or self.env.prompt(self.task)), {"tools": tools}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        if self._done:
            raise EnvStateError("the trajectory has ended")
        self.turns += 1
        if not isinstance(self.env, MultiTurnEnv):
            verdict = self.env.verify(action, self.task)
            self._done = True
            return BaseTextEnvStepOutput(
                observations=[], reward=verdict.score, done=True, metadata={"verdict": verdict.to_dict()}
            )
        before = len(self._messages)
        messages, reward, terminated, truncated, info = self.env.step(action)
        self._messages = messages
        self._done = terminated or truncated
        new = [m for m in messages[before + 1 :] if m.get("role") != "assistant"]
        verdict = info.get("verdict")
        return BaseTextEnvStepOutput(
            observations=new,
            reward=float(reward),
            done=self._done,
            metadata={
                "verdict": verdict.to_dict() if verdict is not None else None,
                "turn": info.get("turn"),
            },
        )

    def close(self) -> None:
        """Nothing per trajectory to free: the shared env keeps its pools for the next one."""


def register() -> None:
    """Add :class:`RlvrTextEnv` to skyrl-gym's registry as ``rlvr_gym`` (once)."""
    import skyrl_gym

    if ENV_CLASS not in skyrl_gym.envs.registration.registry:
        skyrl_gym.register(id=ENV_CLASS, entry_point=f"{__name__}:RlvrTextEnv")


__all__ = ["ENV_CLASS", "RlvrTextEnv", "register"]
