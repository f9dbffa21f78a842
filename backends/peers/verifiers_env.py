"""Any env as a PrimeIntellect ``verifiers`` 0.4 Environment (``pip install verifiers==0.4.0``).

verifiers 0.4 (``verifiers.v1``) builds an environment from a config: a *taskset* (the rows),
*tasks* whose ``@vf.reward`` methods score a finished trace, and per seat a *harness* (the
program that talks to the model) in a *runtime*. It resolves each piece by id, importing a
module with a flat name and taking the one ``Taskset`` / ``Harness`` subclass its ``__all__``
exports. This module is that plugin, registered under :data:`TASKSET_MODULE`:

* :class:`RlvrTaskset` poses ``split`` of any registered env (the env's own question and system
  prompt) and labels each task ``{split, index}``;
* :class:`RlvrTask`'s reward is our env's ``verify`` on the model's last reply, so the reward
  verifiers records is the verdict our trainers, eval and audit see (the verdict rides along
  in ``trace.info``);
* :class:`ChatHarness` is a one-turn chat loop run in-process. verifiers' built-in chat harness
  (``null``) runs a PEP 723 script through ``uv``, which resolves ``openai``, ``mcp`` and
  ``httpx`` from PyPI on first use; its harness contract allows an in-process loop "as long as
  every model call goes through ``endpoint`` + ``secret``" (verifiers' interception server), so
  this one does, and needs no network besides the model server.

:func:`load_environment` returns the ``vf.Env`` (a ``SingleAgentEnv``); :func:`env_config` is
its config, for verifiers' own entry points (``EvalConfig(env=env_config(...))`` and
``verifiers.v1.cli.eval.runner.run_eval``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from openai import AsyncOpenAI
from pydantic import Field
from verifiers.v1.types import content_text

from rlvr_gym.backends.peers import plain, shared_env
from rlvr_gym.backends.task_labels import label_of, task_of
from rlvr_gym.envs import SingleTurnEnv
from rlvr_gym.error import InvalidArgumentError

TASKSET_ID = "rlvr-gym-taskset"
TASKSET_MODULE = "rlvr_gym_taskset"  # what verifiers imports for TASKSET_ID ('-' -> '_')


class RlvrTasksetConfig(vf.TasksetConfig):
    """Which env, with which settings, and which of its tasks."""

    env_id: str = ""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    split: str | None = None
    """The env's split to pose (its first split when unset)."""


class RlvrTaskData(vf.TaskData):
    """A task's wire half: the env and the label of the task in it (not the answer key: the
    reward reads the row from the env, so a trace cannot alter what it is scored against)."""

    env_id: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    label: dict[str, Any]


class RlvrTask(vf.Task[RlvrTaskData]):
    """Scored by our env's verifier."""

    @vf.reward
    async def verdict(self, task: RlvrTaskData, trace: vf.Trace) -> float:
        env = shared_env(task.env_id, task.env_kwargs)
        replies = trace.assistant_messages
        completion = content_text(replies[-1].content) if replies else ""
        result = env.verify(completion, task_of(env, task.label))
        trace.info["verdict"] = result.to_dict()
        return float(result.score)


class RlvrTaskset(vf.Taskset[RlvrTask, RlvrTasksetConfig]):
    """The tasks of one split of an rlvr-gym env, in the env's order."""

    def load(self) -> Iterator[RlvrTask]:
        config = self.config
        env = _single_step(config.env_id, config.env_kwargs)
        split = config.split or env.splits[0]
        for index, row in enumerate(env.tasks(split)):
            yield RlvrTask(
                RlvrTaskData(
                    id=f"{config.env_id}/{split}/{index}",
                    prompt=env.question(row),
                    system_prompt=env.system_prompt,
                    env_id=config.env_id,
                    env_kwargs=plain(config.env_kwargs),
                    label=label_of(split, index),
                ),
                config.task,
            )


class ChatHarnessConfig(vf.HarnessConfig):
    """No settings: one chat completion per rollout."""


class ChatHarness(vf.Harness[ChatHarnessConfig]):
    """One chat completion through verifiers' interception endpoint (which records it in the
    trace and forwards it to the run's model client)."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [] if system is None else [{"role": "system", "content": system}]
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages.extend(m.model_dump(exclude_none=True) for m in prompt)
        async with AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
            reply = await client.chat.completions.create(model=ctx.model, messages=messages)
        return vf.ProgramResult(exit_code=0, stdout=reply.choices[0].message.content or "", stderr="")


def _single_step(env_id: str, env_kwargs: dict[str, Any]) -> Any:
    """The shared env, refused unless it is a :class:`SingleTurnEnv` (a tool env is not one):
    verifiers' tools are MCP servers, ours run in our sandbox inside the env's own episode loop."""
    if not env_id:
        raise InvalidArgumentError("name the env: env_id (e.g. 'gsm8k')")
    env = shared_env(env_id, env_kwargs)
    if not isinstance(env, SingleTurnEnv):
        raise InvalidArgumentError(
            f"{env_id!r} is a {type(env).__name__}, not a SingleTurnEnv (a tool env, or another turn "
            "protocol); the verifiers adapter plays single-step envs only"
        )
    return env


def _register() -> None:
    """Make this module importable by the flat name verifiers derives from :data:`TASKSET_ID`
    (its loader cannot import a dotted module path)."""
    sys.modules.setdefault(TASKSET_MODULE, sys.modules[__name__])


def env_config(env_id: str, split: str | None = None, **env_kwargs: Any) -> vf.SingleAgentEnvConfig:
    """verifiers' config for ``env_id`` (settings as ``env_kwargs``): our taskset, our chat
    harness, in verifiers' subprocess runtime (the harness starts no process; the default
    runtime is Prime's remote sandbox). Raises an :class:`rlvr_gym.Error` for an unknown env,
    bad settings or a tool env, here rather than at the first rollout."""
    env = _single_step(env_id, env_kwargs)
    if split is not None and split not in env.splits:
        raise InvalidArgumentError(f"unknown split {split!r} for {env_id!r}; splits are {list(env.splits)}")
    _register()
    return vf.SingleAgentEnvConfig(
        taskset={"id": TASKSET_ID, "env_id": env_id, "env_kwargs": plain(env_kwargs), "split": split},
        agent={"runtime": {"type": "subprocess"}},
    )


def load_environment(env_id: str, split: str | None = None, **env_kwargs: Any) -> vf.Env:
    """``env_id`` as a verifiers Environment, built by verifiers' own loader."""
    from verifiers.v1.utils.loaders import load_environment as vf_load

    return vf_load(env_config(env_id, split, **env_kwargs))


__all__ = ["ChatHarness", "RlvrTaskset", "env_config", "load_environment"]
