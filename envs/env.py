"""Env, the base of every rlvr_gym env, and SingleTurnEnv: one prompt, one completion, one verdict.

:class:`Env` is a real ``gymnasium.Env`` holding what every env has whatever its turn protocol:
tasks, prompts, the rubric that scores them, the trainer-facing batch API, ``reset`` and the
clear errors. Its subclasses say what ``step`` means: :class:`SingleTurnEnv` scores one
completion and ends the episode; :class:`~rlvr_gym.envs.tool_env.MultiTurnEnv` plays tool calls
turn by turn. Code that takes any env takes an ``Env``; code that feeds a completion to ``step``
once takes a ``SingleTurnEnv``. (Named as Gymnasium's ``gymnasium.Env`` and verifiers' ``vf.Env``
name theirs.) Authoring an env means writing:

* ``load_tasks(split)``  -> a sequence of task rows (dicts of JSON-like values)
* ``question(task)``     -> the user message for a task
* ``rubric``             -> a :class:`rlvr_gym.verifiers.Rubric` (or any verifier) that scores a completion
* ``reference_completion(task)`` (optional) -> a completion that must score 1.0; ``check_env``
  uses it as the oracle, and trainers may use it for a supervised warm start.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Literal, overload

import gymnasium

from rlvr_gym.envs.spaces import AnyText, ChatMessages
from rlvr_gym.error import (
    EnvStateError,  # noqa: F401 - defined with the whole tree
    InvalidArgumentError,
    InvalidTypeError,
    OutOfRangeError,
)
from rlvr_gym.verifiers import Rubric, Task, Verdict, Verifier, freeze, run_verifier_batch, thaw

PromptFormat = Literal["chat", "text"]
Observation = list[dict[str, str]] | str
GYMNASIUM_NAMESPACE = "rlvr_gym"
"""The namespace our envs have in Gymnasium's registry (``gymnasium.make("rlvr_gym/arith-v0")``)."""


def registry_id(env_id: str) -> str:
    """Our registry's id for an id of Gymnasium's registry: ``rlvr_gym/arith-v0`` -> ``arith-v0``;
    an id with a namespace of its own is the same in both (the inverse of ``envs.gymnasium_id``)."""
    namespace, _, name = env_id.partition("/")
    return name if namespace == GYMNASIUM_NAMESPACE and name else env_id


class FrozenRows(Sequence[Task]):
    """A read-only view of a lazy task sequence: each row read is frozen, so callers cannot edit
    the rows the env scores against. (Lists and tuples are frozen once, at load.)"""

    def __init__(self, rows: Sequence[Task]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> Task: ...
    @overload
    def __getitem__(self, index: slice) -> list[Task]: ...
    def __getitem__(self, index: int | slice) -> Task | list[Task]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return freeze(self.rows[index])

    def __iter__(self) -> Iterator[Task]:
        return (self[i] for i in range(len(self)))


def freeze_rows(rows: Sequence[Task]) -> Sequence[Task]:
    """Task rows no caller can change: a tuple of frozen rows, or a freezing view of a lazy one."""
    return tuple(freeze(row) for row in rows) if type(rows) in (list, tuple) else FrozenRows(rows)


def unwrap(env: object) -> Env | None:
    """The rlvr_gym env ``env`` is or wraps, else ``None``.

    ``gymnasium.make`` hands back our env inside its wrappers (``OrderEnforcing``,
    ``PassiveEnvChecker``); the checker, the audit and the trainer helpers work on the env itself
    (its tasks, prompts and rubric, which no Gymnasium wrapper changes), so they take either.
    """
    if isinstance(env, gymnasium.Wrapper):
        env = env.unwrapped
    return env if isinstance(env, Env) else None


class Env(gymnasium.Env[Observation, str]):
    """Any rlvr_gym env: ``reset`` poses a task; its tasks, prompts and rubric serve the batch API.

    Subclass :class:`SingleTurnEnv` (one completion per episode) or
    :class:`~rlvr_gym.envs.tool_env.MultiTurnEnv` (tool calls, then an answer), which say what
    ``step`` does; a class of tasks and rubric meant for both protocols subclasses ``Env`` itself
    (``ArithBase``: ``ArithEnv`` adds single-step play, a tool env adds its tools).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    splits: ClassVar[tuple[str, ...]] = ("train", "test")
    default_system_prompt: ClassVar[str | None] = None
    rubric: Rubric | Verifier

    def __init__(self, *, prompt_format: PromptFormat = "chat", system_prompt: str | None = None) -> None:
        if prompt_format not in ("chat", "text"):
            raise InvalidArgumentError(f"prompt_format must be 'chat' or 'text', got {prompt_format!r}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidTypeError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
        if not self.splits:
            raise InvalidArgumentError(f"{type(self).__name__}.splits is empty: an env needs at least one split")
        self.prompt_format: PromptFormat = prompt_format
        self.system_prompt = system_prompt if system_prompt is not None else self.default_system_prompt
        self.observation_space = ChatMessages() if prompt_format == "chat" else AnyText()
        self.action_space = AnyText()
        self._tasks: dict[str, Sequence[Task]] = {}
        self._current: tuple[str, int, Task] | None = None

    @property
    def id(self) -> str:
        """The registered id (``gsm8k-v0``), or the class name of an env built without the registry.

        The one place this is worked out: run folders, rollout logs, eval summaries and the audit
        all name an env by it. The same under both makes: ``gymnasium.make("rlvr_gym/gsm8k-v0")``
        leaves Gymnasium's spec (``rlvr_gym/gsm8k-v0``) on the env, and its ``id`` is ``gsm8k-v0``
        as from ``rlvr_gym.make`` — the id ``rlvr_gym.make`` and ``rlvr-gym eval --env`` take back.
        """
        spec = getattr(self, "spec", None)
        return registry_id(spec.id) if spec is not None else type(self).__name__

    # ----- what subclasses write -------------------------------------------------------------
    def load_tasks(self, split: str) -> Sequence[Task]:
        """All tasks of ``split``, in a fixed order. Called once per split, then cached."""
        raise NotImplementedError(f"{type(self).__name__} must implement load_tasks(split)")

    def question(self, task: Task) -> str:
        """The user message that poses ``task``."""
        raise NotImplementedError(f"{type(self).__name__} must implement question(task)")

    def reference_completion(self, task: Task) -> str:
        """A completion that solves ``task`` and must score 1.0 (the oracle for ``check_env``)."""
        raise NotImplementedError(f"{type(self).__name__} has no reference_completion(task)")

    def wrong_completions(self, task: Task) -> list[str]:
        """Completions that must not pass; envs add near-misses of their own."""
        return ["", "I am not sure.", "<answer></answer>"]

    def benchmark_metrics(
        self, verdicts: Sequence[Mapping[str, Any]], tasks: Sequence[Task]
    ) -> dict[str, float]:
        """A benchmark's own figures over scored rollouts (``Verdict.to_dict()`` each, with its
        task), which ``evaluate()`` reports beside accuracy: IFEval's four accuracies for
        ``instructions-v0``. None by default."""
        return {}

    # ----- trainer-facing batch API ------------------------------------------------------------
    def tasks(self, split: str = "train") -> Sequence[Task]:
        """The tasks of ``split`` (validated name; loaded once). Rows are read-only
        (:class:`rlvr_gym.verifiers.FrozenDict`): editing one raises instead of changing the answer key."""
        if split not in self.splits:
            raise InvalidArgumentError(
                f"unknown split {split!r} for {type(self).__name__}; splits are {list(self.splits)}"
            )
        if split not in self._tasks:
            loaded = self.load_tasks(split)
            if len(loaded) == 0:
                raise InvalidArgumentError(f"{type(self).__name__} split {split!r} has no tasks")
            self._tasks[split] = freeze_rows(loaded)
        return self._tasks[split]

    def prompt(self, task: Task) -> Observation:
        """The observation for ``task``: chat messages, or one string when ``prompt_format='text'``."""
        question = self.question(task)
        if self.prompt_format == "text":
            return question if self.system_prompt is None else f"{self.system_prompt}\n\n{question}"
        messages = [] if self.system_prompt is None else [{"role": "system", "content": self.system_prompt}]
        return [*messages, {"role": "user", "content": question}]

    def verify(self, completion: object, task: Task) -> Verdict:
        """Score one completion: a batch of one, so ``step`` scores exactly as batches do."""
        return self.verify_batch([completion], [task])[0]

    def verify_batch(self, completions: Sequence[object], tasks: Sequence[Task]) -> list[Verdict]:
        """Score completions against their tasks, pairwise (same length required).

        The rubric's batch path, whatever the rubric is: a :class:`Rubric` passes the batch through
        each component, any other verifier (a plain function included) is called per item. Training
        rewards, eval and the audit all score through here. Never raises on model output; a
        verifier bug becomes ``error`` verdicts for its items.
        """
        return run_verifier_batch(self.rubric, completions, tasks)

    # ----- Gymnasium API -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Pose a task: ``options["index"]`` picks it, else the seeded RNG does.

        ``options["split"]`` chooses the split (default: the first of ``splits``). The same
        ``(seed, index, split)`` always poses the same task.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        split = options.pop("split", self.splits[0])
        index = options.pop("index", None)
        if options:
            raise InvalidArgumentError(f"unknown reset options {sorted(options)}; known: 'index', 'split'")
        tasks = self.tasks(split)
        if index is None:
            index = int(self.np_random.integers(len(tasks)))
        elif isinstance(index, bool) or not isinstance(index, int):
            raise InvalidTypeError(f"options['index'] must be an int, got {type(index).__name__}")
        elif not 0 <= index < len(tasks):
            raise OutOfRangeError(
                f"options['index']={index} is out of range for split {split!r} ({len(tasks)} tasks)"
            )
        task = tasks[index]
        self._current = (split, index, task)
        return self.prompt(task), self._info(split, index, task)

    def step(self, action: object) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """What a turn does is the protocol's: :class:`SingleTurnEnv` or ``MultiTurnEnv``."""
        raise NotImplementedError(
            f"{type(self).__name__} has no turn protocol: subclass SingleTurnEnv or MultiTurnEnv, not Env"
        )

    def _posed(self) -> tuple[str, int, Task]:
        """The ``(split, index, task)`` the last ``reset`` posed; ``step`` before ``reset`` is an error."""
        if self._current is None:
            raise EnvStateError("step() called before reset(): call env.reset() to pose a task first")
        return self._current

    def _info(self, split: str, index: int, task: Task, verdict: Verdict | None = None) -> dict[str, Any]:
        """A fresh info dict: the task is a new mutable copy, never the row the env scores against
        (Gymnasium's checker demands new data per call; a caller editing it changes nothing)."""
        info: dict[str, Any] = {"split": split, "index": index, "task": thaw(task)}
        if verdict is not None:
            info["verdict"] = verdict
        return info

    def close(self) -> None:
        """Release the verifiers' worker processes (math worker, code sandbox pool).

        Safe to call twice; the env stays usable and its workers restart on the next verification.
        """
        close = getattr(self.rubric, "close", None) if hasattr(self, "rubric") else None
        if callable(close):
            close()
        super().close()


class SingleTurnEnv(Env):
    """A single-step text env: ``reset`` poses a task, ``step(completion)`` scores it and ends
    the episode. The class to subclass for a task answered in one completion."""

    _stepped: bool = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Pose a task (see :meth:`Env.reset`); the episode's one step is still to come."""
        posed = super().reset(seed=seed, options=options)
        self._stepped = False
        return posed

    def step(self, action: object) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Score the completion ``action``; the episode ends at once (``terminated=True``)."""
        split, index, task = self._posed()
        if self._stepped:
            raise EnvStateError("step() called twice: a single-turn episode has one step; call reset()")
        verdict = self.verify(action, task)
        self._stepped = True
        return self.prompt(task), verdict.score, True, False, self._info(split, index, task, verdict)
