"""A tool env as the class TRL's ``GRPOTrainer(environment_factory=...)`` instantiates.

TRL makes one instance per rollout, calls ``reset(**row)`` with the rollout's dataset row
(a returned string is appended to the last user message), and exposes every public method as a
tool (name, type hints and docstring make the schema). The class built here has exactly that
shape and nothing more: each of the env's :func:`~rlvr_gym.envs.tool` methods becomes a method
that steps a private :class:`~rlvr_gym.envs.MultiTurnEnv` with that one call, so TRL's rollouts
and ``env.step`` run the same code, limits and verdicts.

One task per GRPO group: ``reset(**row)`` poses the task its row names (the ``task_split`` and
``task_index`` columns of :func:`rlvr_gym.backends.trl_adapter.dataset`), and TRL gives every
rollout of a group the same row. A row that names no task (TRL's placeholder rows when no
dataset is passed) is refused: posing the next seeded task per rollout would give each rollout
of a group a different question and make the group-relative advantages meaningless.

TRL never shows the env a rollout's last message, so the class has no ``get_reward``: the
reward function of :func:`rlvr_gym.backends.tool_rewards.EpisodeRewards` (what
``trl_adapter.reward_funcs(env)`` returns for a tool env) receives the rollouts' messages and
``environments``, plays each rollout's final plain message as its answer, exactly as ``env.step``
would, and scores the episode. A verdict of ``error`` (our fault) is ``None``: unscored, never 0.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from rlvr_gym.envs import MultiTurnEnv, make, parse_tool_calls
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError
from rlvr_gym.verifiers import Verdict

EPISODE_OVER = "The episode is over; no more tool calls are taken."


class ToolEnvAdapter:
    """Base of the generated classes. ``template`` is the env every instance spawns from."""

    template: MultiTurnEnv

    def __init__(self) -> None:
        self.env = self.template.spawn()
        self.info: dict[str, Any] = {}

    def reset(self, **row: Any) -> str | None:
        """Pose the task the row names (``task_split``, ``task_index``; the prompt is already in
        the row, so nothing is appended). A row naming no task, or a task of another env, is
        refused (see the module doc: every rollout of a group must be posed the same task)."""
        index, split = row.get("task_index"), row.get("task_split")
        if index is None or split is None:
            raise InvalidArgumentError(
                f"{type(self).__name__}.reset() got a row without task_split/task_index columns: pass "
                "GRPOTrainer(train_dataset=rlvr_gym.backends.trl_adapter.dataset(env)) so that every "
                "rollout of a GRPO group is posed the same task"
            )
        label = row.get("task_env")
        if label is not None and label != self.env.id:
            raise InvalidArgumentError(
                f"the row is a task of {label!r}, but this environment_factory plays {self.env.id!r}: "
                "build the dataset and the environment_factory from the same env"
            )
        self.env.reset(options={"index": int(index), "split": str(split)})
        return None

    def _posed(self) -> tuple[str, int] | None:
        """``(split, index)`` of the task this rollout was posed (``None`` before ``reset``)."""
        current = self.env._current
        return None if current is None else (str(current[0]), int(current[1]))

    def _end(self, completion: Any = None) -> Verdict:
        """End the episode with the rollout's messages (TRL's completion) and return its verdict.

        TRL ends a rollout at a message without a tool call and never shows it to the env; that
        message is played here as the answer, as ``env.step`` plays it. A last message that still
        calls tools (the tool-calling budget ran out) is not run: the episode is out of turns."""
        if not self.env.done and isinstance(completion, list | tuple) and completion:
            last = completion[-1]
            if isinstance(last, Mapping) and last.get("role") == "assistant" and not parse_tool_calls(last):
                *_, self.info = self.env.step({"role": "assistant", "content": last.get("content") or ""})
        return self.env.finish()

    @property
    def verdict(self) -> Verdict:
        """The final verdict (ends the episode if it is still open)."""
        return self.env.finish()

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.env.done:
            return EPISODE_OVER
        obs, _, _, _, self.info = self.env.step(self.env.tool_call(name, **arguments))
        return str(obs[-1]["content"]) if obs and obs[-1].get("role") == "tool" else ""


def _method(name: str, tool: Callable[..., Any]) -> Callable[..., Any]:
    """A method with ``tool``'s name, signature and docstring that routes through ``env.step``."""

    def method(self: ToolEnvAdapter, **arguments: Any) -> str:
        return self._call(name, arguments)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = tool.__doc__
    method.__signature__ = inspect.signature(tool)  # type: ignore[attr-defined]
    method.__annotations__ = {**inspect.get_annotations(tool, eval_str=True), "return": str}
    return method


def environment_factory(env: str | MultiTurnEnv, **make_options: Any) -> type:
    """The class for ``GRPOTrainer(environment_factory=...)`` from a tool env or its id.

    ``make_options`` go to :func:`rlvr_gym.envs.make` when ``env`` is an id. Train it with
    ``train_dataset=dataset(env)`` and ``reward_funcs=reward_funcs(env)`` (see the module doc).
    """
    if isinstance(env, str):
        env = make(env, **make_options)
    if not isinstance(env, MultiTurnEnv):
        raise InvalidTypeError(
            f"environment_factory needs a tool env (an envs.MultiTurnEnv such as 'gsm8k-python'), got "
            f"{type(env).__name__}; single-step envs train through reward_funcs() and dataset()"
        )
    namespace: dict[str, Any] = {
        "template": env,
        "__doc__": f"{env.id} as a TRL environment: tools {env.tool_names()}.",
        "__module__": __name__,
    }
    for name in env.tool_names():
        namespace[name] = _method(name, getattr(type(env), name))
    return type(type(env).__name__, (ToolEnvAdapter,), namespace)
