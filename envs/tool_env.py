"""MultiTurnEnv: tool-use episodes in the same Gymnasium API as the single-step envs (both are an ``Env``).

``step(action)`` takes one assistant message — text, or a ``{"role": "assistant", "content": ...,
"tool_calls": [...]}`` mapping as chat APIs and TRL produce. A message that calls tools gets the
tools' answers back as ``tool`` messages in the next observation (the whole conversation so far);
a message without a tool call is the final answer, scored by the env's rubric (``terminated``);
running out of turns ends the episode unanswered (``truncated``, reward 0), and so does running
out of the episode's time budget (``episode_time_s``: env time spent inside ``step``; the call
that crosses it finishes, later calls are refused, verdict ``timeout``). The final verdict and a
record of every turn are in ``info``.

Tool calls in text use the Hermes/Qwen form most open models are trained on::

    <tool_call>{"name": "run_python", "arguments": {"code": "print(6 * 7)"}}</tool_call>

An env declares its tools as methods marked :func:`tool` (typed arguments, a Google-style
docstring): the same methods are what :func:`rlvr_gym.backends.trl_adapter.environment_factory`
hands to TRL. What the model writes never becomes a tool message by itself: a ``tool`` role or a
``<tool_response>`` in the action is just assistant text, so a fake tool result cannot be injected.

The batch API (``verify``, ``verify_batch``, ``tasks``, ``prompt``) still scores a *final answer*
against a task, so a tool env also trains and evaluates single-step.
"""

from __future__ import annotations

import copy
import inspect
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from rlvr_gym.envs.env import Env, EnvStateError, Observation
from rlvr_gym.envs.spaces import ChatMessages
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Reason, Task, Verdict, completion_text

F = TypeVar("F", bound=Callable[..., Any])
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
MAX_CALLS_PER_TURN = 4
"""Tool calls beyond this in one message are refused (each still gets an answer saying so)."""
MAX_CALL_CHARS = 64 * 1024
"""A ``<tool_call>`` block longer than this is refused unread (an error call, the model is told)."""
MAX_PARSED_CALLS = 4 * MAX_CALLS_PER_TURN
"""Blocks after this many in one message are not read at all (the ones read are answered)."""
EPISODE_TIME_S = 60.0
"""Default budget of env time per episode (tool calls and scoring inside ``step``, not the
model's generation): 5 turns of 4 calls at 5 s each could otherwise hold a rollout ~100 s."""


def tool(method: F) -> F:
    """Mark an env method as a tool the model may call (its name, type hints and docstring are
    the tool's schema). It returns the tool's answer as text, or a :class:`Final`."""
    method.__rlvr_tool__ = True  # type: ignore[attr-defined]
    return method


@dataclass(frozen=True, slots=True)
class Final:
    """What a tool returns to end the episode: the verdict, and the text the model sees."""

    verdict: Verdict
    text: str


@dataclass(slots=True)
class ToolCall:
    """One parsed call: ``name`` and ``arguments``, or ``error`` when it could not be parsed."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _call_of(raw: object) -> ToolCall:
    """A ``{"name", "arguments"}`` or OpenAI ``{"type": "function", "function": {...}}`` call."""
    if isinstance(raw, Mapping) and isinstance(raw.get("function"), Mapping):
        raw = raw["function"]
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        return ToolCall("?", error="a tool call needs a 'name' string and an 'arguments' object")
    arguments = raw.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return ToolCall(raw["name"][:64], error="the arguments are not valid JSON")
    if not isinstance(arguments, Mapping):
        return ToolCall(raw["name"][:64], error="the arguments must be a JSON object")
    return ToolCall(raw["name"][:64], dict(arguments))


def parse_tool_calls(message: Mapping[str, Any]) -> list[ToolCall]:
    """The tool calls of an assistant message: its ``tool_calls`` list, else ``<tool_call>`` blocks
    in its text. A block that does not parse is a call with an ``error`` (the model is told)."""
    structured = message.get("tool_calls")
    if isinstance(structured, list | tuple) and structured:
        return [_call_of(raw) for raw in structured]
    calls = []
    for body in tool_call_blocks(message.get("content") or ""):
        if body is None:
            calls.append(ToolCall("?", error=f"the tool call is longer than {MAX_CALL_CHARS} characters"))
            continue
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError):
            calls.append(ToolCall("?", error="the tool call is not valid JSON"))
            continue
        calls.append(_call_of(raw))
    return calls


def tool_call_blocks(text: str) -> list[str | None]:
    """The stripped bodies of ``<tool_call>...</tool_call>`` blocks, in order; ``None`` for a body
    over :data:`MAX_CALL_CHARS`. A linear scan (``str.find``): the regex it replaces backtracked
    cubically on an unclosed tag followed by whitespace (3 KB held the GIL ~12 s). An opening tag
    without a closing one ends the scan; at most :data:`MAX_PARSED_CALLS` blocks are read."""
    if not isinstance(text, str):
        return []
    bodies: list[str | None] = []
    position = 0
    while len(bodies) < MAX_PARSED_CALLS:
        start = text.find(_OPEN, position)
        if start < 0:
            break
        start += len(_OPEN)
        end = text.find(_CLOSE, start)
        if end < 0:
            break
        bodies.append(text[start:end].strip() if end - start <= MAX_CALL_CHARS else None)
        position = end + len(_CLOSE)
    return bodies


def assistant_message(action: object) -> dict[str, Any] | None:
    """The action as an assistant message; ``None`` if it is neither text nor a message. Whatever
    role a mapping claims, it is recorded as the assistant's (the model cannot write tool output)."""
    if isinstance(action, Mapping):
        text = completion_text(action.get("content") or "")
        calls = action.get("tool_calls")
        message: dict[str, Any] = {"role": "assistant", "content": text if text is not None else ""}
        if isinstance(calls, list | tuple) and calls:
            message["tool_calls"] = copy.deepcopy(list(calls))
        return message
    text = completion_text(action)
    return None if text is None else {"role": "assistant", "content": text}


class MultiTurnEnv(Env):
    """A tool-use env: episodes of up to ``max_turns`` assistant messages.

    Not a :class:`~rlvr_gym.envs.env.SingleTurnEnv`: code that steps an env once takes only
    those. Subclasses add :func:`tool` methods (with the tasks and rubric of an ``Env`` such as
    ``ArithBase``, or their own) and may override :meth:`on_answer` (what a message
    without a tool call does; by default it is the final answer) and :meth:`out_of_turns`
    (the verdict when the turn budget runs out; by default ``no_answer``, score 0).
    """

    default_max_turns: ClassVar[int] = 4
    default_episode_time_s: ClassVar[float] = EPISODE_TIME_S

    def __init__(
        self, *, max_turns: int | None = None, episode_time_s: float | None = None, **env_options: Any
    ) -> None:
        super().__init__(**env_options)
        if self.prompt_format != "chat":
            raise InvalidArgumentError(f"{type(self).__name__} is a chat env: prompt_format must be 'chat'")
        turns = self.default_max_turns if max_turns is None else max_turns
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
            raise InvalidArgumentError(f"max_turns must be an integer >= 1, got {max_turns!r}")
        self.max_turns = turns
        budget = self.default_episode_time_s if episode_time_s is None else episode_time_s
        if isinstance(budget, bool) or not isinstance(budget, int | float) or not 0 < budget < float("inf"):
            raise InvalidArgumentError(
                f"episode_time_s must be a positive number of seconds, got {episode_time_s!r}"
            )
        self.episode_time_s = float(budget)
        self._spent = 0.0
        self._step_started: float | None = None
        self.observation_space = ChatMessages(tools=True)
        self._messages: list[dict[str, Any]] = []
        self._turns: list[dict[str, Any]] = []
        self._verdict: Verdict | None = None
        self._record: dict[str, Any] = {}
        self._infra_errors: list[str] = []
        self._out_of_turns = False

    # ----- tools -------------------------------------------------------------------------------
    @classmethod
    def tool_names(cls) -> list[str]:
        """Names of the methods marked :func:`tool`, in definition order along the MRO."""
        names: dict[str, None] = {}
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                if getattr(member, "__rlvr_tool__", False):
                    names[name] = None
        return list(names)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools as JSON schemas (``transformers.utils.get_json_schema``), for a chat template."""
        from transformers.utils import get_json_schema

        return [get_json_schema(getattr(self, name)) for name in self.tool_names()]

    def on_answer(self, text: str, task: Task) -> Final | str:
        """A message without a tool call: the final answer (score it), or, for envs that give
        feedback, the text of a ``user`` message to continue with."""
        return Final(self.verify(text, task), "")

    def out_of_turns(self, task: Task) -> Verdict:
        """The verdict when ``max_turns`` messages went by without a final answer."""
        return Verdict.fail(Reason.NO_ANSWER, why=f"no final answer within {self.max_turns} turns")

    def out_of_time(self, task: Task) -> Verdict:
        """The verdict when the episode's time budget ran out before a final answer (as
        :meth:`out_of_turns`, with the time as the reason: score 0 by default)."""
        verdict = self.out_of_turns(task)
        if verdict.reason is not Reason.NO_ANSWER:
            return verdict
        return Verdict.fail(
            Reason.TIMEOUT,
            why=f"the episode's time budget of {self.episode_time_s:g} s ran out before a final answer",
        )

    @property
    def time_left(self) -> float:
        """Seconds of the episode's time budget not yet spent inside ``step`` (this one included)."""
        running = time.monotonic() - self._step_started if self._step_started is not None else 0.0
        return self.episode_time_s - self._spent - running

    def reference_episode(self, task: Task) -> list[dict[str, Any]]:
        """The assistant messages of a correct episode on ``task`` (tool replies come from the
        env when played): the reference answer as a final plain message. Tool envs override it to
        show their tools in use; warm starts and the one-scorer-for-every-loop tests play it."""
        return [{"role": "assistant", "content": self.reference_completion(task)}]

    # ----- Gymnasium API -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Pose a task (as :meth:`Env.reset`) and start a new conversation."""
        obs, info = super().reset(seed=seed, options=options)
        self._messages = copy.deepcopy(obs) if isinstance(obs, list) else []
        self._turns, self._verdict, self._infra_errors = [], None, []
        self._spent = 0.0
        self._out_of_turns = False
        return obs, {**info, "turn": 0}

    @property
    def done(self) -> bool:
        """The episode has ended (a final verdict exists)."""
        return self._verdict is not None

    @property
    def out_of_turns_ended(self) -> bool:
        """The episode ended without a final answer (the turn limit, or :meth:`finish` early)."""
        return self._out_of_turns

    def step(self, action: object) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """One assistant message: run its tool calls, or take it as the answer. See the module doc."""
        self._posed()
        if self._verdict is not None:
            raise EnvStateError("step() called after the episode ended; call reset()")
        self._step_started = time.monotonic()
        try:
            return self._step(action)
        finally:
            self._spent += time.monotonic() - self._step_started
            self._step_started = None

    def _step(self, action: object) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        split, index, task = self._posed()
        message = assistant_message(action)
        turn: dict[str, Any] = {"turn": len(self._turns) + 1}
        if message is None:
            final: Final | str | None = Final(
                Verdict.fail(Reason.BAD_FORMAT, why=f"action is {type(action).__name__}, not a message"), ""
            )
            message = {"role": "assistant", "content": ""}
            self._messages.append(message)
        else:
            self._messages.append(message)
            calls = parse_tool_calls(message)
            final = self._run_calls(calls, task, turn) if calls else self.on_answer(message["content"], task)
            if not calls and isinstance(final, str | Final) and (text := getattr(final, "text", final)):
                self._messages.append({"role": "user", "content": text})  # feedback on an answer
                turn["feedback"] = True
        self._turns.append(turn)
        terminated = isinstance(final, Final)
        out_of_time = not terminated and self.time_left <= 0
        truncated = not terminated and (out_of_time or len(self._turns) >= self.max_turns)
        if terminated:
            self._verdict = final.verdict
        elif out_of_time:
            self._verdict = self.out_of_time(task)
            turn["truncated"] = f"the episode's time budget of {self.episode_time_s:g} s is spent"
        elif truncated:
            self._verdict = self.out_of_turns(task)
            self._out_of_turns = True
        if self._verdict is not None and self._infra_errors and not self._verdict.passed:
            self._verdict = Verdict.fail(Reason.ERROR, error=f"tool failure: {self._infra_errors[0]}")
        info = self._info(split, index, task, self._verdict)
        info["turn"] = len(self._turns)
        info["turns"] = copy.deepcopy(self._turns)
        reward = self._verdict.score if self._verdict is not None else 0.0
        return copy.deepcopy(self._messages), float(reward), terminated, truncated, info

    def _run_calls(self, calls: list[ToolCall], task: Task, turn: dict[str, Any]) -> Final | None:
        """Answer each call with a ``tool`` message; a tool returning :class:`Final` ends the turn."""
        turn["tool_calls"] = []
        names = set(self.tool_names())
        for position, call in enumerate(calls):
            record: dict[str, Any] = {"name": call.name}
            if position >= MAX_CALLS_PER_TURN:
                answer: Final | str = f"error: at most {MAX_CALLS_PER_TURN} tool calls per message"
            elif self.time_left <= 0:
                answer = f"error: the episode's time budget of {self.episode_time_s:g} s is spent; not run"
            elif call.error is not None:
                answer = f"error: {call.error}"
            elif call.name not in names:
                answer = f"error: unknown tool {call.name!r}; tools: {sorted(names)}"
            else:
                answer = self._invoke(call, record)
            record["ok"] = not (isinstance(answer, str) and answer.startswith("error:"))
            turn["tool_calls"].append(record)
            if isinstance(answer, Final):
                self._messages.append({"role": "tool", "name": call.name, "content": answer.text})
                return answer
            self._messages.append({"role": "tool", "name": call.name, "content": answer})
        return None

    def _invoke(self, call: ToolCall, record: dict[str, Any]) -> Final | str:
        method = getattr(self, call.name)
        try:
            inspect.signature(method).bind(**call.arguments)
        except TypeError as exc:  # wrong or missing arguments: the model's mistake, told to it
            return f"error: bad arguments for {call.name}: {str(exc)[:200]}"
        self._record = record
        try:
            return method(**call.arguments)
        except Exception as exc:  # noqa: BLE001 - a tool bug is ours: the episode goes unscored
            self.note(infra_error=f"{call.name}: {type(exc).__name__}: {exc}")
            return f"error: the {call.name} tool failed (not your fault)"
        finally:
            self._record = {}

    def note(self, **facts: Any) -> None:
        """Called by a tool: add facts to this call's record in ``info["turns"]``. ``infra_error``
        marks a failure of ours (the sandbox): an episode with one that does not pass is unscored."""
        self._record.update(facts)
        if facts.get("infra_error"):
            self._infra_errors.append(str(facts["infra_error"]))

    def spawn(self) -> MultiTurnEnv:
        """Another env for a concurrent episode: shares tasks, rubric and sandbox pool (read-only
        or thread-safe), has its own episode state and RNG. Cheaper than rebuilding from the spec."""
        other = copy.copy(self)
        other._messages, other._turns, other._record, other._infra_errors = [], [], {}, []
        other._verdict, other._current = None, None
        other._np_random = None
        other._spent, other._step_started = 0.0, None
        return other

    def finish(self) -> Verdict:
        """End the episode now (the caller saw a final message the env did not: TRL's tool loop
        ends a rollout without showing the env its last message) and return its verdict."""
        if self._current is None:
            raise EnvStateError("finish() called before reset()")
        if self._verdict is None:
            self._verdict = self.out_of_turns(self._current[2])
            self._out_of_turns = True
            if self._infra_errors and not self._verdict.passed:
                self._verdict = Verdict.fail(Reason.ERROR, error=f"tool failure: {self._infra_errors[0]}")
        return self._verdict

    def tool_call(self, name: str, /, **arguments: Any) -> dict[str, Any]:
        """An assistant message calling one tool (for scripts, tests and the TRL bridge). ``name``
        is positional-only: a tool may have an argument called ``name`` too."""
        return {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}],
        }
