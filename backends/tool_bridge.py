"""A tool env as the class TRL's ``GRPOTrainer(environment_factory=...)`` instantiates.

TRL makes one instance per rollout, calls ``reset(**row)`` (a returned string is appended to the
last user message), exposes every public method as a tool (name, type hints and docstring make
the schema) and calls ``get_reward()`` once the rollout ends. The class built here has exactly
that shape and nothing more: each of the env's :func:`~rlvr_gym.envs.tool` methods becomes a
method that steps a private :class:`~rlvr_gym.envs.MultiTurnEnv` with that one call, so TRL's
rollouts and ``env.step`` run the same code, limits and verdicts.

``get_reward()`` is the episode's verdict score; a verdict of ``error`` (our fault: the sandbox
or a verifier failed) is ``None``, which TRL leaves unscored, never 0. TRL never shows the env a
rollout's last message, so an answer must go through a tool (``submit_answer``/``submit``); a
rollout that ends without one scores as the env's :meth:`~MultiTurnEnv.out_of_turns` says.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

from rlvr_gym.envs import MultiTurnEnv, make
from rlvr_gym.error import InvalidType
from rlvr_gym.verifiers import Reason, Verdict

EPISODE_OVER = "The episode is over; no more tool calls are taken."


class ToolEnvAdapter:
    """Base of the generated classes. ``template`` is the env every instance spawns from."""

    template: MultiTurnEnv
    seed: int = 0
    _seeds: itertools.count

    def __init__(self) -> None:
        self.env = self.template.spawn()
        self.info: dict[str, Any] = {}

    def reset(self, **row: Any) -> str | None:
        """Pose a task. A row from :func:`rlvr_gym.backends.trl_adapter.dataset` (``task_split``,
        ``task_index``) already holds the prompt: that task is posed and nothing is appended.
        Without one (no dataset: TRL's placeholder rows), the next seeded task is posed and its
        system prompt and question are returned for TRL to put in the user message."""
        index, split = row.get("task_index"), row.get("task_split")
        if index is not None and split is not None:
            self.env.reset(options={"index": int(index), "split": str(split)})
            return None
        obs, _ = self.env.reset(seed=next(type(self)._seeds))
        return "\n\n".join(m["content"] for m in obs if m["role"] in ("system", "user"))

    def get_reward(self) -> float | None:
        """The episode's score; ``None`` (unscored) if a tool or verifier failed on our side."""
        verdict = self.verdict
        return None if verdict.reason is Reason.ERROR else float(verdict.score)

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


def environment_factory(env: str | MultiTurnEnv, *, seed: int = 0, **make_options: Any) -> type:
    """The class for ``GRPOTrainer(environment_factory=...)`` from a tool env or its id.

    ``make_options`` go to :func:`rlvr_gym.envs.make` when ``env`` is an id. ``seed`` starts the
    sequence of seeds that picks tasks when TRL runs without a dataset.
    """
    if isinstance(env, str):
        env = make(env, **make_options)
    if not isinstance(env, MultiTurnEnv):
        raise InvalidType(
            f"environment_factory needs a tool env (an envs.MultiTurnEnv such as 'gsm8k-python'), got "
            f"{type(env).__name__}; single-step envs train through reward_funcs() and dataset()"
        )
    namespace: dict[str, Any] = {
        "template": env,
        "seed": seed,
        "_seeds": itertools.count(seed),
        "__doc__": f"{env.id} as a TRL environment: tools {env.tool_names()}.",
        "__module__": __name__,
    }
    for name in env.tool_names():
        namespace[name] = _method(name, getattr(type(env), name))
    return type(type(env).__name__, (ToolEnvAdapter,), namespace)
