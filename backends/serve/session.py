"""One served env as an OpenEnv ``Environment``: what each WebSocket session plays.

OpenEnv's server (``openenv.core.env_server``) owns the protocol — sessions, the ``/ws``
messages, ``/reset``, ``/step``, ``/state``, ``/schema``, ``/metadata`` — and calls a factory
once per session. This module is that factory's product, built only on our envs' public API
(``reset``/``step``/``tasks``/``spawn``) and the :class:`~rlvr_gym.backends.scoring.Scorer`:

* ``reset(seed=..., split=..., index=...)`` poses the task exactly as ``env.reset`` does, so a
  GRPO group shares one task by sending the same ``split`` and ``index`` (or ``seed``);
* ``step({"completion": text})`` or ``step({"message": {...}})`` plays one turn; the observation
  carries the verdict (``score``, ``passed``, ``reason``, ``answer``), ``reward`` is the score,
  and an item the scorer left unscored has ``score``/``reward`` ``None`` and reason ``unscored``.

A single-step env is scored through the shared :class:`~.batching.Batcher` (the Scorer: local
pool or Ray). A tool env plays each turn with its own ``step`` on a per-session ``spawn()``,
in a thread pool (tool calls run in the sandbox); its final answer is scored by the env's own
rubric, as ``step`` does in-process. The task row (the answer key) never leaves the server.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import AliasChoices, Field

from rlvr_gym.backends.scoring import Scorer
from rlvr_gym.backends.serve.batching import Batcher
from rlvr_gym.backends.serve.journal import Journal
from rlvr_gym.envs import Env, EnvStateError, MultiTurnEnv
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Verdict

UNSCORED = "unscored"
"""The reason an observation carries when the scorer's budget left the item unscored."""


class EnvAction(Action):
    """One turn: the completion text, or the assistant message (tool envs: with ``tool_calls``).

    One required field, so clients that fill a single-field action from a model's raw reply
    (verifiers' OpenEnv taskset does) can; ``message`` is accepted as its other name.
    """

    completion: str | dict[str, Any] = Field(
        validation_alias=AliasChoices("completion", "message"),
        description="the completion text, or an assistant message {'content': ..., 'tool_calls': [...]}",
    )


class EnvObservation(Observation):
    """What the policy sees, and after the last turn the verdict (never the answer key)."""

    env_id: str = Field(default="", description="the served env's registered id")
    split: str | None = None
    index: int | None = Field(default=None, description="the task's index within its split")
    prompt: list[dict[str, Any]] | str = Field(
        default="", description="chat messages (a tool env: the whole conversation so far) or text"
    )
    tools: list[dict[str, Any]] = Field(default_factory=list, description="tool schemas (tool envs)")
    turn: int = 0
    truncated: bool = False
    score: float | None = Field(default=None, description="the verdict's score; None until scored")
    passed: bool | None = None
    reason: str | None = Field(default=None, description="correct, wrong_answer, ..., or 'unscored'")
    answer: str | None = Field(default=None, description="what the verifier extracted")
    details: dict[str, Any] = Field(default_factory=dict)


@dataclass
class HostedEnv:
    """One env the server hosts: shared by all its sessions (tasks, rubric, scorer, pools)."""

    env_id: str
    env: Env
    knobs: dict[str, Any]
    batcher: Batcher
    scorer: Scorer
    tool_pool: ThreadPoolExecutor | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    journal: Journal | None = None

    async def record(self, split: str, index: int, verdict: Verdict | None, **where: Any) -> None:
        """Put an answered verdict in the journal (when there is one) before it is sent."""
        if self.journal is not None:
            entry = {"env": self.env_id, "split": split, "index": index, **where}
            await self.journal.awrite([{**entry, "verdict": None if verdict is None else verdict.to_dict()}])

    @property
    def is_tool_env(self) -> bool:
        return isinstance(self.env, MultiTurnEnv)

    def close(self) -> None:
        """Free the scorer's workers, the tool threads and the env's pools."""
        self.scorer.close()
        if self.tool_pool is not None:
            self.tool_pool.shutdown(wait=False, cancel_futures=True)
        self.env.close()

    def metadata(self) -> EnvironmentMetadata:
        """OpenEnv's metadata: the id, the summary, and the knobs the server was started with."""
        import json

        import rlvr_gym

        knobs = json.dumps(self.knobs, sort_keys=True, default=repr)
        return EnvironmentMetadata(
            name=self.env_id,
            description=f"{self.info.get('summary', self.env_id)} (rlvr-gym; settings {knobs})",
            version=getattr(rlvr_gym, "__version__", None),
            readme_content=f"# {self.env_id}\n\nServed by `rlvr-gym serve`.\n\nSettings:\n\n```json\n{knobs}\n```\n",
        )


def _verdict_fields(verdict: Verdict | None) -> dict[str, Any]:
    if verdict is None:
        return {
            "score": None,
            "passed": None,
            "reason": UNSCORED,
            "answer": None,
            "details": {},
            "reward": None,
        }
    data = verdict.to_dict()
    return {**data, "reward": verdict.score}


class ServedEnv(Environment):
    """An OpenEnv session over a hosted env; cheap to make (the factory runs once per session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, hosted: HostedEnv) -> None:
        super().__init__()
        self.hosted = hosted
        base = hosted.env
        # A session of its own: a tool env's spawn(); a single-step env's episode state is small.
        self._env: Env = base.spawn() if isinstance(base, MultiTurnEnv) else copy.copy(base)
        self._episode: str | None = None
        self._where: tuple[str, int] | None = None
        self._steps = 0
        self._done = False
        self._lock = asyncio.Lock()

    # ----- OpenEnv's Environment -------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None, **options: Any) -> EnvObservation:
        """Pose a task: ``index`` (and ``split``) pick it, else ``seed`` does, as ``env.reset``."""
        unknown = sorted(set(options) - {"split", "index"})
        if unknown:
            raise InvalidArgumentError(f"unknown reset fields {unknown}; known: seed, episode_id, split, index")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise InvalidArgumentError(f"seed must be an integer, got {seed!r}")
        reset_options = {key: value for key, value in options.items() if value is not None}
        prompt, info = self._env.reset(seed=seed, options=reset_options)
        self._episode = episode_id or str(uuid.uuid4())
        self._where = (info["split"], info["index"])
        self._steps, self._done = 0, False
        return EnvObservation(
            env_id=self.hosted.env_id,
            split=info["split"],
            index=info["index"],
            prompt=prompt,
            tools=self.hosted.tools,
        )

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **options: Any
    ) -> EnvObservation:
        return self.reset(seed=seed, episode_id=episode_id, **options)

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> EnvObservation:
        raise EnvStateError("this env steps asynchronously (OpenEnv calls step_async)")

    async def step_async(
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> EnvObservation:
        """Play one turn; see the module doc. Refused before ``reset`` and after the last turn."""
        if not isinstance(action, EnvAction):
            action = EnvAction.model_validate(
                action.model_dump() if hasattr(action, "model_dump") else action
            )
        payload = action.completion
        async with self._lock:  # one turn at a time per session, even if a client pipelines
            if self._where is None:
                raise EnvStateError("step before reset: send a reset first (it poses the task)")
            if self._done:
                raise EnvStateError("the episode has ended: send a reset for the next task")
            self._steps += 1
            if isinstance(self._env, MultiTurnEnv):
                return await self._tool_turn(payload)
            return await self._single_turn(payload)

    async def _single_turn(self, completion: object) -> EnvObservation:
        split, index = self._where  # type: ignore[misc]
        if isinstance(completion, Mapping):  # the assistant message's text is the completion
            completion = completion.get("content") or ""
        task = self.hosted.env.tasks(split)[index]
        (verdict,) = await self.hosted.batcher.score([completion], [task])
        self._done = True
        await self.hosted.record(split, index, verdict, episode=self._episode)
        fields = _verdict_fields(verdict)
        return EnvObservation(
            env_id=self.hosted.env_id,
            split=split,
            index=index,
            prompt=self._env.prompt(task),
            turn=1,
            done=True,
            **fields,
        )

    async def _tool_turn(self, payload: object) -> EnvObservation:
        split, index = self._where  # type: ignore[misc]
        loop = asyncio.get_running_loop()
        messages, _, terminated, truncated, info = await loop.run_in_executor(
            self.hosted.tool_pool, self._env.step, payload
        )
        self._done = terminated or truncated
        fields: dict[str, Any] = {"reward": None}
        if self._done:
            fields = _verdict_fields(info.get("verdict"))
            await self.hosted.record(split, index, info.get("verdict"), episode=self._episode)
        return EnvObservation(
            env_id=self.hosted.env_id,
            split=split,
            index=index,
            prompt=messages,
            turn=int(info.get("turn", self._steps)),
            truncated=truncated,
            done=self._done,
            **fields,
        )

    @property
    def state(self) -> State:
        where = self._where or (None, None)
        return State(
            episode_id=self._episode,
            step_count=self._steps,
            env_id=self.hosted.env_id,
            split=where[0],
            index=where[1],
            done=self._done,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return self.hosted.metadata()

    def close(self) -> None:
        """Nothing per session to free: the pools and scorer belong to the hosted env."""


__all__ = ["UNSCORED", "EnvAction", "EnvObservation", "HostedEnv", "ServedEnv"]
