"""Sampling from any OpenAI-compatible server (``rlvr-gym eval --engine openai``).

The model runs elsewhere — vLLM's or SGLang's server, ``transformers serve``, a hosted API — and
this module only asks it for chat completions; scoring, logs, resume and pass@k stay those of
:func:`rlvr_gym.trainers.evaluate.evaluate`.

The client is the ``openai`` package (``pip install 'rlvr-gym[openai]'``), not hand-written HTTP:
it retries connection errors, timeouts, 408/409/429 and 5xx with exponential backoff and jitter,
honours the server's ``Retry-After`` on a rate limit, and raises typed errors for the rest
(401 bad key, 404 unknown model), which become one line here.

``n`` samples are asked for in one request where the server takes the ``n`` field; a server that
refuses it (``transformers serve`` does) gets one request per sample, sent concurrently, each
with its own seed (a shared seed would make the samples identical).

A tool env's turns are asked with the API's native ``tools``; an answer's ``tool_calls`` come
back as an assistant message the env runs, and its ``tool`` replies go out paired with their
calls' ids. A server that refuses ``tools`` (HTTP 400/422) gets the text form instead: the tools
described in the system message in the Hermes/Qwen form, calls written as ``<tool_call>`` blocks
(which the env parses), replies sent back as ``<tool_response>`` user messages.
"""

from __future__ import annotations

import importlib.util
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

from rlvr_gym.backends.config import about
from rlvr_gym.envs.env import Observation
from rlvr_gym.error import InvalidArgumentError, NotAvailableError, RunFailedError

API_KEY_ENV = "OPENAI_API_KEY"


def available() -> tuple[bool, str]:
    if importlib.util.find_spec("openai") is None:
        return False, "the openai engine needs the openai package: pip install 'rlvr-gym[openai]'"
    return True, "openai client"


def messages_of(prompt: Observation) -> list[dict[str, str]]:
    """The env's prompt as chat messages (a plain-text prompt becomes one user message)."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]


def tool_messages_of(conversation: Observation) -> list[dict[str, Any]]:
    """A tool episode's conversation in the API's native form: each ``tool`` reply carries the
    id of the call it answers (the env answers calls in order), calls carry ids and JSON-text
    arguments."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for turn, message in enumerate(messages_of(conversation) if isinstance(conversation, str) else conversation):
        role = str(message["role"])
        if role == "assistant" and message.get("tool_calls"):
            calls = []
            for position, call in enumerate(message["tool_calls"]):
                function = call.get("function", call)
                arguments = function.get("arguments", {})
                calls.append(
                    {
                        "id": str(call.get("id") or f"call_{turn}_{position}"),
                        "type": "function",
                        "function": {
                            "name": str(function.get("name")),
                            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                        },
                    }
                )
            pending = [c["id"] for c in calls]
            out.append({"role": "assistant", "content": str(message.get("content") or ""), "tool_calls": calls})
        elif role == "tool" and pending:
            out.append({"role": "tool", "tool_call_id": pending.pop(0), "content": str(message["content"])})
        elif role == "tool":  # a reply to a call written as text: the text form
            out.append({"role": "user", "content": f"<tool_response>\n{message['content']}\n</tool_response>"})
        else:
            out.append({"role": role, "content": str(message.get("content") or "")})
    return out


def text_tool_messages_of(conversation: Observation, tools: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The text form, for a server without native tools: the schemas in the system message, calls
    as ``<tool_call>`` blocks, replies as ``<tool_response>`` user messages."""
    described = "\n".join(json.dumps(tool) for tool in tools)
    guide = (
        "You may call these tools. To call one, write\n<tool_call>\n{\"name\": <name>, \"arguments\": "
        f"<object>}}\n</tool_call>\nTools:\n{described}"
    )
    out: list[dict[str, str]] = []
    for message in tool_messages_of(conversation):
        if message["role"] == "assistant" and message.get("tool_calls"):
            blocks = "".join(
                f"<tool_call>\n{json.dumps({'name': c['function']['name'], 'arguments': json.loads(c['function']['arguments'] or '{}')})}\n</tool_call>"
                for c in message["tool_calls"]
            )
            out.append({"role": "assistant", "content": message["content"] + blocks})
        elif message["role"] == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{message['content']}\n</tool_response>"})
        else:
            out.append({"role": message["role"], "content": message["content"]})
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{guide}"}
    else:
        out.insert(0, {"role": "system", "content": guide})
    return out


class OpenAISampler:
    """Chat completions from an OpenAI-compatible server at ``base_url`` for model ``model``."""

    engine = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: Annotated[
            str | None, about("sent as a bearer token", cli_default="$OPENAI_API_KEY, else none")
        ] = None,
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        max_retries: Annotated[int, about("retries on 429, 5xx, timeouts and connection errors")] = 5,
        timeout_s: Annotated[float, about("seconds per request", flag="--request-timeout")] = 120.0,
        concurrency: Annotated[int, about("requests in flight for one task's n samples")] = 8,
    ) -> None:
        ok, why = available()
        if not ok:
            raise NotAvailableError(why)
        if not base_url.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"--base-url must be an http(s) URL like http://127.0.0.1:8000/v1, got {base_url!r}"
            )
        if max_retries < 0 or timeout_s <= 0 or concurrency < 1:
            raise InvalidArgumentError(
                f"need max_retries >= 0, timeout_s > 0, concurrency >= 1; got {max_retries}, {timeout_s}, {concurrency}"
            )
        import openai

        self._openai = openai
        # A local server needs no key, but the client insists on one: a placeholder is sent then.
        key = api_key or os.environ.get(API_KEY_ENV) or "not-needed"
        self.client = openai.OpenAI(
            base_url=base_url, api_key=key, max_retries=max_retries, timeout=timeout_s
        )
        self.base_url = base_url
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.concurrency = concurrency
        self.takes_n: bool | None = None  # learnt from the first request that asks for n > 1
        self.native_tools: bool | None = None  # learnt from the first request that sends tools

    def _create(
        self, messages: list[dict[str, Any]], n: int, seed: int, tools: list[dict[str, Any]] | None = None
    ) -> list[Any]:
        openai = self._openai
        extra: dict[str, Any] = {"n": n} if n > 1 else {}
        if tools:
            extra["tools"] = tools
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                max_tokens=self.max_new_tokens,
                temperature=self.temperature,
                seed=seed,
                **extra,
            )
        except openai.APIStatusError as exc:
            raise _ServerSaid(exc.status_code, _message(exc)) from None
        except openai.APIConnectionError as exc:  # timeouts included, after the client's retries
            raise RunFailedError(f"openai engine: cannot reach {self.base_url} ({exc}) after retries") from None
        return [_reply(choice.message) for choice in sorted(response.choices, key=lambda c: c.index)]

    def sample(
        self, prompt: Observation, n: int, seed: int, *, tools: list[dict[str, Any]] | None = None
    ) -> list[Any]:
        """``n`` completions: text, or (with ``tools``) assistant messages that may call them."""
        if not tools:
            return self._sample(messages_of(prompt), n, seed)
        if self.native_tools is not False:
            try:
                replies = self._sample(tool_messages_of(prompt), n, seed, tools)
            except _Refused:
                self.native_tools = False  # the server takes no tools: the text form from now on
            else:
                self.native_tools = True
                return replies
        return self._sample(text_tool_messages_of(prompt, tools), n, seed)

    def _sample(
        self, messages: list[dict[str, Any]], n: int, seed: int, tools: list[dict[str, Any]] | None = None
    ) -> list[Any]:
        if tools and self.native_tools is None:  # the first request with tools: may the server refuse them?
            try:
                return self._sample_n(messages, n, seed, tools)
            except _ServerSaid as exc:
                if exc.status in (400, 422):
                    raise _Refused from None
                raise exc.failure(self) from None
        return self._sample_n(messages, n, seed, tools)

    def _sample_n(
        self, messages: list[dict[str, Any]], n: int, seed: int, tools: list[dict[str, Any]] | None = None
    ) -> list[Any]:
        if n > 1 and self.takes_n is not False:
            try:
                texts = self._create(messages, n, seed, tools)
            except _ServerSaid as exc:
                if exc.status not in (400, 422):
                    raise exc.failure(self) from None
                self.takes_n = False  # the server refused the request with n: ask one sample at a time
            else:
                if len(texts) == n:
                    self.takes_n = True
                    return texts
                self.takes_n = False  # the server ignored n
        try:
            if n == 1:
                return self._create(messages, 1, seed, tools)
            with ThreadPoolExecutor(min(n, self.concurrency)) as pool:
                return [
                    t
                    for texts in pool.map(lambda i: self._create(messages, 1, seed + i, tools), range(n))
                    for t in texts
                ]
        except _ServerSaid as exc:
            if tools and self.native_tools is None and exc.status in (400, 422):
                raise
            raise exc.failure(self) from None


def _reply(message: Any) -> Any:
    """A choice's message: its text, or an assistant message with its ``tool_calls``."""
    calls = getattr(message, "tool_calls", None)
    if not calls:
        return message.content or ""
    return {
        "role": "assistant",
        "content": message.content or "",
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in calls
        ],
    }


class _Refused(Exception):
    """The server refused a request with ``tools``: it has no native tool calling."""


class _ServerSaid(Exception):
    """An HTTP error status the client gave up on (after its retries, for 429 and 5xx)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message

    def failure(self, sampler: OpenAISampler) -> RunFailedError:
        hint = {
            401: "check --api-key (or $OPENAI_API_KEY)",
            403: "check --api-key (or $OPENAI_API_KEY)",
            404: f"is {sampler.model!r} a model this server serves, and --base-url its /v1 root?",
            429: "rate limited even after the retries; lower --n or raise --max-retries",
        }.get(self.status, "see the server's log")
        return RunFailedError(
            f"openai engine: {sampler.base_url} answered HTTP {self.status}: {self.message[:200]} ({hint})"
        )


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", exc))
