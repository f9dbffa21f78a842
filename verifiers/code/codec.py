"""Plain-data values and length-prefixed frames: how the judge and the sandbox talk.

Only exact builtin types cross the boundary (no subclasses, no custom ``__eq__``), and the judge
decodes with :func:`json.loads` plus a fixed tag table, never ``pickle``/``marshal``/``eval``. So a
value from the sandbox can be wrong, but it cannot be an object that lies about equality.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import select
import struct
import time
from typing import Any

from rlvr_gym.error import Error, InvalidArgument

MAX_FRAME_BYTES = 8 * 1024 * 1024
"""A bigger message from the sandbox is a protocol violation, not something to buffer."""

MAX_DEPTH = 64
_HEADER = struct.Struct(">I")


class CodecError(InvalidArgument):
    """A value that cannot cross the boundary, or a frame that breaks the protocol."""


class ChannelClosed(Error, EOFError):
    """The other end closed the pipe (the sandbox exited or was killed)."""


class ChannelTimeout(Error, TimeoutError):
    """No complete frame arrived before the deadline."""


def encode_value(value: Any, depth: int = 0) -> Any:
    """A JSON-ready form of ``value``; tuples, sets, dicts, bytes and complex are tagged."""
    if depth > MAX_DEPTH:
        raise CodecError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is int:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"x": repr(value)}
    if kind is list:
        return [encode_value(v, depth + 1) for v in value]
    if kind is tuple:
        return {"t": [encode_value(v, depth + 1) for v in value]}
    if kind is set or kind is frozenset:
        return {"s" if kind is set else "f": [encode_value(v, depth + 1) for v in value]}
    if kind is dict:
        return {"d": [[encode_value(k, depth + 1), encode_value(v, depth + 1)] for k, v in value.items()]}
    if kind is bytes:
        return {"b": base64.b64encode(value).decode()}
    if kind is complex:
        return {"c": [encode_value(value.real), encode_value(value.imag)]}
    raise CodecError(f"a {kind.__name__} cannot cross the sandbox boundary")


_TAGS = frozenset("tsfdbcx")


def _decode_tagged(obj: dict[str, Any]) -> Any:
    """``json.loads`` object hook: a one-key dict with a tag becomes the tagged type.

    Inner values are already rebuilt (the hook runs bottom-up, inside the C parser), so no
    Python recursion walks the value. Any other dict stays a plain dict: harmless data.
    """
    if len(obj) != 1:
        return obj
    ((tag, body),) = obj.items()
    if tag not in _TAGS:
        return obj
    if tag == "t":
        return tuple(body)
    if tag == "s":
        return set(body)
    if tag == "f":
        return frozenset(body)
    if tag == "d":
        return {k: v for k, v in body}
    if tag == "b":
        return base64.b64decode(body, validate=True)
    if tag == "c":
        return complex(*body)
    if body in ("nan", "inf", "-inf"):
        return float(body)
    raise CodecError(f"bad tagged value {obj!r:.80}")


_ENCODER = json.JSONEncoder(separators=(",", ":"))
"""One encoder made up front: ``json.dumps`` with options builds one per call, and in a sandbox
every object that touches is a copied page."""


def dumps(message: Any) -> bytes:
    """One frame: 4-byte big-endian length, then compact JSON."""
    payload = _ENCODER.encode(message).encode()
    if len(payload) > MAX_FRAME_BYTES:
        raise CodecError(f"message of {len(payload)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(payload)) + payload


def loads(frame: bytes, *, values: bool = True) -> Any:
    """The message in one whole frame made by :func:`dumps` (tagged values rebuilt)."""
    try:
        return json.loads(frame[_HEADER.size :], object_hook=_decode_tagged if values else None)
    except (ValueError, TypeError, RecursionError, binascii.Error) as exc:
        raise CodecError(f"undecodable frame: {exc}") from None


def write_frame(fd: int, message: Any) -> None:
    data = memoryview(dumps(message))
    while data:
        data = data[os.write(fd, data) :]


class FrameReader:
    """Reads frames from one fd through a buffer: usually one ``read`` per message, not two.

    ``values=True`` rebuilds tagged values while parsing (for sandbox messages); job frames
    from the pool are plain JSON and must not be re-tagged.
    """

    def __init__(self, fd: int, *, values: bool = False) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.hook = _decode_tagged if values else None

    def _fill(self, needed: int, deadline: float | None) -> None:
        while len(self.buffer) < needed:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                    raise ChannelTimeout("no reply before the deadline")
            chunk = os.read(self.fd, max(1 << 16, needed - len(self.buffer)))
            if not chunk:
                raise ChannelClosed("the other end closed the channel")
            self.buffer += chunk

    def read(self, deadline: float | None = None) -> Any:
        """The next message; a frame over :data:`MAX_FRAME_BYTES` or bad JSON is a CodecError."""
        self._fill(_HEADER.size, deadline)
        (size,) = _HEADER.unpack_from(self.buffer)
        if size > MAX_FRAME_BYTES:
            raise CodecError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
        self._fill(_HEADER.size + size, deadline)
        payload = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
        del self.buffer[: _HEADER.size + size]
        try:
            return json.loads(payload, object_hook=self.hook)
        except (ValueError, TypeError, RecursionError, binascii.Error) as exc:
            raise CodecError(f"undecodable frame: {exc}") from None
