"""The server's outer wall (an ASGI middleware): the token, and a cap on request bodies.

OpenEnv's own client (``GenericEnvClient``) cannot send headers, so a token travels either as
``Authorization: Bearer TOKEN`` or as the first two path segments, ``/token/TOKEN/...`` (a
client's base URL then reads ``http://host:port/token/TOKEN/gsm8k-v0``), the way notebook
servers put theirs in the URL. Both are compared in constant time. A request body is read at
most ``max_body`` bytes; past that it is answered 413 before any handler runs (read and dropped up to
``DRAIN_FACTOR`` times the cap, so the client hears why) (WebSocket
messages are capped by the server's ``ws_max_size``, the same number).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
DRAIN_FACTOR = 8
"""A body over the cap is still read (and dropped) up to this many caps, so a client that sends it
whole hears the 413 rather than a reset connection; past that the server hangs up."""
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _refuse(scope: Scope, send: Send, status: int, message: str) -> None:
    """An HTTP error as JSON (``{"detail": ...}``, FastAPI's shape); a WebSocket is closed with 1008."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    body = json.dumps({"detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """Wrap ``app``: refuse requests without ``token`` (when one is set) and bodies over ``max_body``."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body: int) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body

    def _authorised(self, scope: Scope) -> Scope | None:
        """The scope to pass on (the token's path prefix removed), or ``None`` when refused."""
        if self.token is None:
            return scope
        expected = self.token.encode()
        for name, value in scope.get("headers", []):
            if name == b"authorization" and hmac.compare_digest(value, b"Bearer " + expected):
                return scope
        parts = scope["path"].split("/", 3)  # "", "token", TOKEN, rest
        if len(parts) >= 3 and parts[1] == "token" and hmac.compare_digest(parts[2].encode(), expected):
            rest = "/" + (parts[3] if len(parts) > 3 else "")
            return {**scope, "path": rest, "raw_path": rest.encode()}
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        passed = self._authorised(scope)
        if passed is None:
            await _refuse(
                scope, send, 401, "a token is required: Authorization: Bearer TOKEN or /token/TOKEN/..."
            )
            return
        if scope["type"] == "websocket":

            async def close_quietly(message: Message) -> None:
                """A close frame to a client already gone is nothing to report (OpenEnv closes
                after the client's own ``close`` message, when the peer may have left)."""
                try:
                    await send(message)
                except OSError:
                    if message["type"] != "websocket.close":
                        raise

            await self.app(passed, receive, close_quietly)
            return
        declared = next(
            (int(v) for n, v in scope.get("headers", []) if n == b"content-length" and v.isdigit()), 0
        )
        if declared > DRAIN_FACTOR * self.max_body:  # far too big to even read: answer and hang up
            await _refuse(scope, send, 413, f"request body over {self.max_body} bytes")
            return
        chunks: list[bytes] = []
        size = 0
        while True:  # read the whole (bounded) body first, so no handler sees a partial one
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= self.max_body:
                chunks.append(chunk)
            elif size > DRAIN_FACTOR * self.max_body:
                break
            else:  # over: read the rest without keeping it, so the client hears the 413
                chunks.clear()
            if not message.get("more_body", False):
                break
        if size > self.max_body:
            await _refuse(scope, send, 413, f"request body over {self.max_body} bytes")
            return
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(passed, replay, send)


__all__ = ["Guard"]
