"""``check_env``: the contract every env must keep, one small documented check per rule.

Modelled on Gymnasium's env checker. Each ``check_*`` raises :class:`EnvCheckError` naming the
rule it found broken; ``check_env`` runs them all and returns the names of those that passed.
The rules that rebuild the env (``spec``, ``instances``) need ``env.spec`` — an env made with
``make`` has one; for an env built by hand they are not run and not reported as passed.
(Gymnasium's own ``gymnasium.utils.env_checker.check_env`` passes on every built-in env too.)
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from rlvr_gym.envs.env import Env, EnvStateError, unwrap
from rlvr_gym.envs.tool_env import MultiTurnEnv
from rlvr_gym.error import (
    EnvCheckError,  # noqa: F401 - defined with the whole tree
    Error,
    InvalidArgumentError,
)
from rlvr_gym.verifiers import Verdict, thaw


def _sample_indices(env: Env, split: str, n_tasks: int) -> list[int]:
    size = len(env.tasks(split))
    step = max(1, size // n_tasks)
    return list(range(0, size, step))[:n_tasks]


def check_spaces(env: Env, n_tasks: int) -> None:
    """Observation and action spaces are Gymnasium spaces, and the action space takes text."""
    if not isinstance(env.observation_space, spaces.Space) or not isinstance(env.action_space, spaces.Space):
        raise EnvCheckError("spaces", "observation_space and action_space must be gymnasium.spaces.Space")
    if not env.action_space.contains("any completion text"):
        raise EnvCheckError("spaces", "action_space must contain plain completion text")


def check_reset(env: Env, n_tasks: int) -> None:
    """``reset`` returns ``(obs, info)``: obs in the observation space, info a dict naming the task."""
    result = env.reset(seed=0)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise EnvCheckError("reset", f"reset() must return (obs, info), got {type(result).__name__}")
    obs, info = result
    if not env.observation_space.contains(obs):
        raise EnvCheckError("reset", f"observation {obs!r:.200} is not in {env.observation_space}")
    if not isinstance(info, dict) or not {"split", "index", "task"} <= info.keys():
        raise EnvCheckError("reset", "reset() info must be a dict with 'split', 'index' and 'task'")
    for split in env.splits:
        for index in _sample_indices(env, split, n_tasks):
            obs, info = env.reset(options={"split": split, "index": index})
            if obs != env.prompt(env.tasks(split)[index]) or info["index"] != index or info["split"] != split:
                raise EnvCheckError(
                    "reset", f"reset(options={{'split': {split!r}, 'index': {index}}}) posed another task"
                )


def check_determinism(env: Env, n_tasks: int) -> None:
    """The same seed poses the same task; tasks and verdicts do not change between calls."""
    for seed in (0, 1, 12345):
        first, info1 = env.reset(seed=seed)
        second, info2 = env.reset(seed=seed)
        if first != second or info1["index"] != info2["index"]:
            raise EnvCheckError("determinism", f"reset(seed={seed}) posed different tasks on two calls")
    for split in env.splits:
        for index in _sample_indices(env, split, n_tasks):
            task = env.tasks(split)[index]
            completion = _reference(env, task)
            if completion is not None and env.verify(completion, task) != env.verify(completion, task):
                raise EnvCheckError(
                    "determinism", f"verify() gave two verdicts for one completion on {split}[{index}]"
                )


def check_step(env: Env, n_tasks: int) -> None:
    """``step`` returns ``(obs, reward, terminated=True, truncated=False, info)`` with the Verdict,
    and refuses to run before ``reset`` or twice in one episode."""
    fresh = copy.copy(env)
    fresh._current = None
    _expect_state_error(lambda: fresh.step("text"), "step() before reset()")
    obs, info = env.reset(seed=0)
    result = env.step(_reference(env, info["task"]) or "some completion")
    if not (isinstance(result, tuple) and len(result) == 5):
        raise EnvCheckError("step", "step() must return (obs, reward, terminated, truncated, info)")
    obs, reward, terminated, truncated, info = result
    if not env.observation_space.contains(obs):
        raise EnvCheckError("step", f"step() observation {obs!r:.200} is not in {env.observation_space}")
    if not isinstance(reward, float) or terminated is not True or truncated is not False:
        raise EnvCheckError(
            "step", f"got reward={reward!r}, terminated={terminated!r}, truncated={truncated!r}"
        )
    verdict = info.get("verdict") if isinstance(info, dict) else None
    if not isinstance(verdict, Verdict) or verdict.score != reward:
        raise EnvCheckError("step", "info['verdict'] must be the Verdict whose score is the reward")
    _expect_state_error(lambda: env.step("again"), "a second step()")


def check_episode(env: Env, n_tasks: int) -> None:
    """Multi-turn envs (:class:`MultiTurnEnv`): a tool call is answered by a ``tool`` message and
    the episode goes on (reward 0.0, neither terminated nor truncated); ``max_turns`` tool calls
    end it ``truncated`` with a verdict that does not pass; a step after the end is refused;
    the info records every turn. Single-turn envs pass trivially."""
    if not isinstance(env, MultiTurnEnv):
        return
    env.reset(seed=0)
    name = env.tool_names()[0] if env.tool_names() else "no_such_tool"
    for turn in range(1, env.max_turns + 1):
        obs, reward, terminated, truncated, info = env.step(env.tool_call("no_such_tool"))
        if not env.observation_space.contains(obs) or obs[-1].get("role") != "tool":
            raise EnvCheckError("episode", f"a tool call (turn {turn}) was not answered by a tool message")
        if (
            not isinstance(reward, float)
            or terminated
            or info.get("turn") != turn
            or len(info["turns"]) != turn
        ):
            raise EnvCheckError("episode", f"turn {turn}: got reward={reward!r}, terminated={terminated!r}")
        if truncated is not (turn == env.max_turns):
            raise EnvCheckError(
                "episode",
                f"turn {turn} of {env.max_turns}: truncated={truncated!r} (only the last turn truncates)",
            )
    verdict = info.get("verdict")
    if not isinstance(verdict, Verdict) or verdict.passed or reward != verdict.score or reward >= 1.0:
        raise EnvCheckError("episode", f"running out of turns must not pass; got {verdict}")
    _expect_state_error(lambda: env.step("again"), f"a step after the episode ended (tool {name})")


def check_oracle(env: Env, n_tasks: int) -> None:
    """Every reference completion passes with score 1.0, through ``verify`` and ``verify_batch``."""
    for split in env.splits:
        tasks = [env.tasks(split)[i] for i in _sample_indices(env, split, n_tasks)]
        completions = [_reference(env, task) for task in tasks]
        if None in completions:
            raise EnvCheckError(
                "oracle", f"{type(env).__name__} has no reference_completion(task) to check against"
            )
        batch = env.verify_batch(completions, tasks)
        for task, completion, verdict in zip(tasks, completions, batch, strict=True):
            if verdict != env.verify(completion, task):
                raise EnvCheckError(
                    "oracle", "verify_batch() and verify() disagree on a reference completion"
                )
            if not verdict.passed or verdict.score != 1.0:
                raise EnvCheckError("oracle", f"reference completion {completion!r:.120} scored {verdict}")


def check_wrong_answers(env: Env, n_tasks: int) -> None:
    """Wrong completions do not pass and score below 1.0; non-text completions get a Verdict."""
    for split in env.splits:
        for index in _sample_indices(env, split, n_tasks):
            task = env.tasks(split)[index]
            for completion in [*env.wrong_completions(task), None, 12345]:
                verdict = env.verify(completion, task)
                if not isinstance(verdict, Verdict) or verdict.passed or verdict.score >= 1.0:
                    raise EnvCheckError(
                        "wrong_answers",
                        f"wrong completion {completion!r:.120} on {split}[{index}] got {verdict}",
                    )
                if verdict.reason == "error":
                    raise EnvCheckError(
                        "wrong_answers", f"verifier bug on {completion!r:.120}: {dict(verdict.details)}"
                    )


def check_verify_pure(env: Env, n_tasks: int) -> None:
    """``verify`` does not change the task it scores (a verifier that writes into its task would
    change the answer key for every later completion)."""
    for split in env.splits:
        for index in _sample_indices(env, split, n_tasks):
            task = thaw(env.tasks(split)[index])  # a plain, mutable copy, as a trainer would hold
            before = copy.deepcopy(task)
            reference = _reference(env, task)
            for completion in [*([reference] if reference is not None else []), *env.wrong_completions(task)]:
                env.verify(completion, task)
                if task != before:
                    raise EnvCheckError(
                        "verify_pure", f"verify({completion!r:.80}, task) changed task {split}[{index}]"
                    )


def check_spec(env: Env, n_tasks: int) -> None:
    """``env.spec`` pickles and rebuilds an env of the same class and spec, as a worker process
    (``AsyncVectorEnv``, a data loader, Ray) must do from the spec alone."""
    try:
        spec = pickle.loads(pickle.dumps(env.spec))
    except Exception as exc:  # noqa: BLE001 - any pickling failure breaks the rule
        raise EnvCheckError(
            "spec",
            f"env.spec does not pickle ({type(exc).__name__}: {exc}); register the env with a "
            "top-level class or a 'module:attr' string, not a lambda or local function",
        ) from None
    rebuilt = _rebuild(spec)
    try:
        if type(rebuilt.unwrapped) is not type(env):
            raise EnvCheckError(
                "spec", f"env.spec builds a {type(rebuilt.unwrapped).__name__}, not a {type(env).__name__}"
            )
    finally:
        rebuilt.close()


def check_instances(env: Env, n_tasks: int) -> None:
    """Two instances built from one spec pose the same tasks, prompts and seeded resets (so an
    env whose ``load_tasks`` uses unseeded randomness fails: its workers would disagree)."""
    other = _rebuild(env.spec).unwrapped
    try:
        for split in env.splits:
            if len(env.tasks(split)) != len(other.tasks(split)):
                raise EnvCheckError("instances", f"two instances have different {split} sizes")
            for index in _sample_indices(env, split, n_tasks):
                if env.tasks(split)[index] != other.tasks(split)[index]:
                    raise EnvCheckError(
                        "instances", f"two instances pose different tasks at {split}[{index}]"
                    )
        for seed in (0, 7):
            if env.reset(seed=seed)[1]["index"] != other.reset(seed=seed)[1]["index"]:
                raise EnvCheckError("instances", f"reset(seed={seed}) picks different tasks in two instances")
    finally:
        other.close()


def check_pickle(env: Env, n_tasks: int) -> None:
    """The env and its verdicts pickle, and the copy scores like the original (for vector envs,
    multiprocessing data loaders and Ray workers)."""
    obs, info = env.reset(seed=0)
    completion = _reference(env, info["task"]) or "some completion"
    try:
        copied = pickle.loads(pickle.dumps(env))
        verdict = env.verify(completion, info["task"])
        verdict_copy = pickle.loads(pickle.dumps(verdict))
    except Exception as exc:  # noqa: BLE001 - any pickling failure breaks the rule
        raise EnvCheckError(
            "pickle", f"env or verdict does not pickle ({type(exc).__name__}: {exc})"
        ) from None
    try:
        if verdict_copy != verdict or copied.verify(completion, info["task"]) != verdict:
            raise EnvCheckError("pickle", "a pickled copy of the env scores a completion differently")
    finally:
        copied.close()


def check_close(env: Env, n_tasks: int, baseline: set[int] | None = None) -> None:
    """``close()`` stops the worker processes verification started (math worker, code sandbox),
    may be called twice, and leaves the env usable (workers restart on demand).

    ``baseline``: the child processes alive before checking began (``check_env`` passes it, so
    a process started by an earlier check counts too); by default, those alive now.
    """
    before = _children() if baseline is None else baseline
    _, info = env.reset(seed=0)
    completion = _reference(env, info["task"]) or "some completion"
    for text in [completion, *env.wrong_completions(info["task"])]:
        env.verify(text, info["task"])
    env.close()
    env.close()
    left = _children() - before
    if left:
        raise EnvCheckError(
            "close", f"close() left {len(left)} child process(es) running: pids {sorted(left)}"
        )
    verdict = env.verify(completion, info["task"])
    env.close()
    if not isinstance(verdict, Verdict) or verdict.reason == "error":
        raise EnvCheckError("close", f"the env cannot verify after close(): {verdict}")


CHECKS: tuple[Callable[[Env, int], None], ...] = (
    check_spaces,
    check_reset,
    check_determinism,
    check_step,
    check_episode,
    check_verify_pure,
    check_oracle,
    check_wrong_answers,
    check_spec,
    check_instances,
    check_pickle,
    check_close,
)
NEEDS_SPEC = frozenset({check_spec, check_instances})


CHECK_NAMES: tuple[str, ...] = tuple(check.__name__.removeprefix("check_") for check in CHECKS)
"""The rule names ``check_env`` reports, in the order it checks them."""


def check_env(env: Env | gymnasium.Env, n_tasks: int = 8) -> list[str]:
    """Run every check on ``env`` (``n_tasks`` tasks per split); returns the names that passed.

    ``env`` may come from ``gymnasium.make``: the env inside Gymnasium's wrappers is checked.
    Raises :class:`EnvCheckError` at the first broken rule.
    """
    if isinstance(n_tasks, bool) or not isinstance(n_tasks, int) or n_tasks < 1:
        raise InvalidArgumentError(f"n_tasks (tasks per split to check) must be an integer >= 1, got {n_tasks!r}")
    given, env = env, unwrap(env)
    if env is None:
        raise EnvCheckError("type", f"expected an rlvr_gym.envs.Env (single- or multi-turn), got {type(given).__name__}")
    passed = []
    baseline = _children()
    for check in CHECKS:
        if check in NEEDS_SPEC and env.spec is None:
            continue
        if check is check_close:
            check_close(env, n_tasks, baseline)
        else:
            check(env, n_tasks)
        passed.append(check.__name__.removeprefix("check_"))
    return passed


def _rebuild(spec: Any) -> gymnasium.Env:
    """A new env from a spec: ours (``EnvSpec.make``) or Gymnasium's (``gymnasium.make``)."""
    make = getattr(spec, "make", None)
    try:
        return make() if callable(make) else gymnasium.make(spec, disable_env_checker=True)
    except Error as exc:
        raise EnvCheckError("spec", f"env.spec does not rebuild the env: {exc}") from None


def _children() -> set[int]:
    """Pids of this process's live children (from ``/proc``; elsewhere multiprocessing's)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return {p.pid for p in multiprocessing.active_children() if p.pid is not None}
    me, pids = str(os.getpid()), set()
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me and fields[0] != "Z":  # state, ppid; a zombie holds nothing
            pids.add(int(stat.parent.name))
    return pids


def _reference(env: Env, task: Any) -> str | None:
    try:
        return env.reference_completion(task)
    except NotImplementedError:
        return None


def _expect_state_error(call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except EnvStateError:
        return
    raise EnvCheckError("step", f"{what} must raise envs.EnvStateError")
