"""The untrusted side: runs inside the sandboxed child and answers the judge's requests.

Nothing here is trusted. The submission runs in this process and may rewrite any of it; that is
fine, because this side only ever *answers questions* ("call ``f`` with these arguments", "run
the program on this stdin") with plain data, or with the number of a value it keeps
(:mod:`rlvr_gym.verifiers.code.remote`). Whether an answer is right is decided by the judge
(:mod:`rlvr_gym.verifiers.code.harness`) in another process, which the submission cannot reach.
"""

from __future__ import annotations

import io
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from rlvr_gym.verifiers.code.codec import (
    ChannelClosedError,
    CodecError,
    FrameReader,
    dumps,
    encode_value,
    write_all,
    write_frame,
)
from rlvr_gym.verifiers.code.remote import Kept

MODULE, SCRIPT = "module", "script"


class OutputLimitExceeded(Exception):
    """The program printed more than its output budget."""


class CountingSink(io.TextIOBase):
    """stdout for module mode: output is never needed there, only bounded."""

    def __init__(self, limit: int) -> None:
        self.limit, self.count = limit, 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.count += len(text)
        if self.count > self.limit:
            raise OutputLimitExceeded(f"output exceeds {self.limit} characters")
        return len(text)


_SINKS = (CountingSink(0), CountingSink(0))
"""Module mode's stdout and stderr, made before any fork: each sandbox resets its own copy
(building io objects in every child cost ~40 copy-on-write faults)."""


_LOADED = dumps({"ok": True})
"""The load report of a program whose top level ran cleanly (most do), encoded before any fork."""


class CappedWriter(io.StringIO):
    """stdout that refuses to grow past ``limit`` characters (a huge-output bomb stops here)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def write(self, text: str) -> int:
        if self.tell() + len(text) > self.limit:
            raise OutputLimitExceeded(f"output exceeds {self.limit} characters")
        return super().write(text)


def describe(exc: BaseException) -> dict[str, str]:
    return {"exc": type(exc).__name__[:60], "msg": str(exc)[:200]}


def _run(body: Callable[[], None]) -> BaseException | None:
    """Run ``body``; the exception it ended with (a clean ``exit()`` is not one)."""
    try:
        body()
    except SystemExit as exc:
        return exc if exc.code not in (None, 0) else None
    except BaseException as exc:  # noqa: BLE001 - report every failure of model code
        return exc
    return None


def _with_stdio(stdin: str, limit: int, body: Callable[[], None]) -> tuple[str, BaseException | None]:
    """Run a script with ``stdin`` as its input; what it printed (capped) and how it ended."""
    out = CappedWriter(limit)
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, CountingSink(limit)
    error = _run(body)
    return out.getvalue(), error


def serve(
    code: types.CodeType,
    make_globals: Callable[[str], dict[str, Any]],
    mode: str,
    output_limit: int,
    request_fd: int,
    reply_fd: int,
    ahead: Sequence[dict[str, Any]] = (),
) -> None:
    """Load the program (module mode), answer the requests planned ``ahead`` (decoded, as they
    came with the program) in order, then answer requests until the judge closes the channel."""
    namespace: dict[str, Any] = {}
    kept = Kept()
    if mode == MODULE:  # one bounded sink for the whole run: module-mode output is never read
        for sink in _SINKS:
            sink.limit, sink.count = output_limit, 0
        sys.stdin, (sys.stdout, sys.stderr) = io.StringIO(""), _SINKS
        namespace = make_globals("submission")
        error = _run(lambda: exec(code, namespace))  # noqa: S102 - sandboxed
        if error is None:
            write_all(reply_fd, _LOADED)
        else:
            write_frame(reply_fd, {"ok": False, **describe(error)})
    for request in ahead:
        write_frame(reply_fd, _answer(request, code, make_globals, namespace, output_limit, kept))
    requests = FrameReader(request_fd, values=True, refs=kept.get)
    while True:
        try:
            request = requests.read()
        except (ChannelClosedError, CodecError):
            return
        write_frame(reply_fd, _answer(request, code, make_globals, namespace, output_limit, kept))


def _answer(
    request: dict[str, Any],
    code: types.CodeType,
    make_globals: Callable[[str], dict[str, Any]],
    namespace: dict[str, Any],
    output_limit: int,
    kept: Kept,
) -> dict[str, Any]:
    op = request.get("op")
    if op in ("call", "getattr", "setattr", "bool"):
        if "ref" in request or op != "call":  # a value kept here, by its number
            number = request.get("ref")
            if not (type(number) is int and 0 <= number < len(kept.values)):
                return {"ok": False, "exc": "ValueError", "msg": "no such value in the sandbox"}
            target = kept.values[number]
        else:
            target = namespace.get(request["name"])
            if not callable(target):
                return {"ok": False, "exc": "NameError", "msg": f"name {request['name']!r} is not defined"}
        result: dict[str, Any] = {}

        def answer() -> None:
            if op == "call":
                value = target(*request["args"], **request["kwargs"])
            elif op == "getattr":
                value = getattr(target, request["name"])
            elif op == "bool":
                value = bool(target)
            else:
                value = setattr(target, request["name"], request["value"])
            result["value"] = encode_value(value, other=kept.keep)

        error = _run(answer)
        if error is None and "value" not in result:  # a clean exit() in the middle of a call
            error = SystemExit(0)
        return {"ok": False, **describe(error)} if error else {"ok": True, "value": result["value"]}
    if op == "main":
        globals_ = make_globals("__main__")
        stdout, error = _with_stdio(request["stdin"], output_limit, lambda: exec(code, globals_))  # noqa: S102
        return {"ok": error is None, "stdout": stdout, **(describe(error) if error else {})}
    return {"ok": False, "exc": "ValueError", "msg": f"unknown request {request.get('op')!r}"}
