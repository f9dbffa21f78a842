"""Plain-data values and length-prefixed frames: how the judge and the sandbox talk.

Only exact builtin types cross the boundary (no subclasses, no custom ``__eq__``), and the judge
decodes with :func:`json.loads` plus a fixed tag table, never ``pickle``/``marshal``/``eval``. So a
value from the sandbox can be wrong, but it cannot be an object that lies about equality.

The judge's cost of decoding is not the submission's to choose (:class:`Budget`): a frame is at
most :data:`MAX_FRAME_BYTES`, all of one submission's answers at most :data:`MAX_ANSWER_BYTES`
and :data:`MAX_ELEMENTS` values (counted on the bytes *before* they are decoded, so 8 MB of ``[]``
never becomes 150 MB of lists), nested at most :data:`MAX_DEPTH` deep; a set or dict whose
elements share hashes (ints chosen to collide make their construction quadratic) is refused.
Whatever goes wrong while decoding is a :class:`CodecError`: the submission's failure.

Two tags carry what plain data cannot (see :mod:`rlvr_gym.verifiers.code.remote` for why this
is safe): ``y``, a builtin type by name from a fixed table (MBPP's ``remove_datatype(t, int)``),
and ``r``, a value the sandbox keeps (an instance of the submission's own class), sent as a
number only: each end decodes it through its own ``refs`` function, and without one it is a
:class:`CodecError`.
"""

from __future__ import annotations

import base64
import binascii
import collections
import functools
import json
import math
import os
import re
import select
import struct
import time
from collections.abc import Callable
from typing import Any

from rlvr_gym.error import ChannelClosedError, ChannelTimeoutError, CodecError, Error, InvalidArgumentError  # noqa: F401 - defined with the whole tree

MAX_FRAME_BYTES = 8 * 1024 * 1024
"""A bigger message from the sandbox is a protocol violation, not something to buffer."""

MAX_DEPTH = 64
MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""All the frames of one submission's answers together."""
MAX_ELEMENTS = 1 << 18
"""Values (every container and scalar) in one submission's answers together: at ~220 bytes for
the costliest (an empty set), the judge holds at most ~60 MB of them."""
MAX_COLLISIONS = 64
"""Elements of one set or dict that may share a hash with another: beyond, its construction
would go quadratic."""
SMALL_FRAME = 64 * 1024
"""Below this a frame is decoded without scanning its bytes first (it cannot hold more than
~22,000 values, ~1.5 MB decoded)."""
_HEADER = struct.Struct(">I")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


_PLAIN_DICTS = (collections.Counter, collections.defaultdict, collections.OrderedDict)
"""The standard library's dict subclasses (exactly these types, never a subclass of them): they
cross as a plain dict, which compares equal where they do (MBPP's tests compare a Counter with a
dict literal). Anything else a dict subclass adds, such as its own ``__eq__``, stays behind."""


BUILTIN_TYPES = {
    t.__name__: t for t in (int, float, complex, str, bytes, bool, list, tuple, dict, set, frozenset)
}
"""The types that cross by name (``y``): the same object on both ends, no code of the submission's."""
_TYPE_NAMES = {t: name for name, t in BUILTIN_TYPES.items()}

Other = Callable[[Any], Any]
"""How one end encodes a value that is not plain data: its ``r`` form, or a :class:`CodecError`."""


def encode_value(value: Any, depth: int = 0, other: Other | None = None, ordered: bool = False) -> Any:
    """A JSON-ready form of ``value``; tuples, sets, dicts, bytes, complex and builtin types are
    tagged; anything else goes to ``other`` (the sandbox keeps it, the judge sends its handle
    back), or without one is a :class:`CodecError`. ``ordered``: a set's elements in the order of
    their encodings, so one set gives one form however it was built (the judge's requests are
    matched to those planned ahead by their bytes: MBPP 341's ``{12, ..., 16}`` as test code
    builds it iterates from 16, as ``ast.literal_eval`` builds it from 12)."""
    if depth > MAX_DEPTH:
        raise CodecError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is int:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"x": repr(value)}
    if kind is list:
        return [encode_value(v, depth + 1, other, ordered) for v in value]
    if kind is tuple:
        return {"t": [encode_value(v, depth + 1, other, ordered) for v in value]}
    if kind is set or kind is frozenset:
        items = [encode_value(v, depth + 1, other, ordered) for v in value]
        if ordered:
            items.sort(key=_encode)
        return {"s" if kind is set else "f": items}
    if kind is dict or kind in _PLAIN_DICTS:  # a Counter arrives as the dict it equals
        return {
            "d": [
                [encode_value(k, depth + 1, other, ordered), encode_value(v, depth + 1, other, ordered)]
                for k, v in value.items()
            ]
        }
    if kind is bytes:
        return {"b": base64.b64encode(value).decode()}
    if kind is complex:
        return {"c": [encode_value(value.real), encode_value(value.imag)]}
    if kind is type and value in _TYPE_NAMES:  # (``type``'s own equality: identity)
        return {"y": _TYPE_NAMES[value]}
    if other is not None:
        return other(value)
    raise CodecError(f"a {kind.__name__} cannot cross the sandbox boundary")


_TAGS = frozenset("tsfdbcxyr")

Refs = Callable[[int, str], Any]
"""How one end rebuilds an ``r`` value (its number and the name of its type): the sandbox looks it
up among those it keeps, the judge makes a handle (:class:`.remote.Remote`)."""


def _hashable_few_collisions(items: list[Any]) -> list[Any]:
    """``items`` if building a set or dict from them stays linear: hashable, few shared hashes."""
    if len(items) > MAX_COLLISIONS:
        hashes = {hash(item) for item in items}  # hash values are distinct ints: no collisions here
        if len(items) - len(hashes) > MAX_COLLISIONS:
            raise CodecError(f"{len(items) - len(hashes)} elements of a set or dict share hashes")
    return items


def _decode_tagged(obj: dict[str, Any], refs: Refs | None = None) -> Any:
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
        return set(_hashable_few_collisions(body))
    if tag == "f":
        return frozenset(_hashable_few_collisions(body))
    if tag == "d":
        pairs = [(k, v) for k, v in body]
        _hashable_few_collisions([k for k, _ in pairs])
        return dict(pairs)
    if tag == "b":
        return base64.b64decode(body, validate=True)
    if tag == "c":
        return complex(*body)
    if tag == "y" and type(body) is str and body in BUILTIN_TYPES:
        return BUILTIN_TYPES[body]
    if tag == "r" and refs is not None and type(body) is list and len(body) == 2:
        number, name = body
        if type(number) is int and type(name) is str:
            return refs(number, name)
    if tag == "x" and body in ("nan", "inf", "-inf"):
        return float(body)
    raise CodecError(f"bad tagged value {obj!r:.80}")


_ENCODER = json.JSONEncoder(separators=(",", ":"))


def _make_encode() -> Callable[[Any], str]:
    """Compact JSON of one message, through a C encoder made once.

    ``JSONEncoder.encode`` runs Python code and builds a new C encoder on every call (~2.5 µs of
    a small frame's ~4; and in a sandbox every object that touches is a copied page); this one
    is built here, before any fork. No circular-reference check: every value that crosses went
    through :func:`encode_value`, which stops at :data:`MAX_DEPTH`, and a job the host builds
    from a cycle fails as deep recursion (``RecursionError``) instead. Without the C module:
    the encoder's own path."""
    make = json.encoder.c_make_encoder
    if make is None:
        return _ENCODER.encode
    encode = make(
        None, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
    )
    return lambda message: "".join(encode(message, 0))


_encode = _make_encode()


def dumps(message: Any) -> bytes:
    """One frame: 4-byte big-endian length, then compact JSON."""
    payload = _encode(message).encode()
    if len(payload) > MAX_FRAME_BYTES:
        raise CodecError(f"message of {len(payload)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(payload)) + payload


_DECODE_ERRORS = (ValueError, TypeError, RecursionError, binascii.Error, ArithmeticError, MemoryError)
"""What ``json.loads`` and the tag table raise on bad input (``OverflowError``: ``complex`` of a
huge int; ``MemoryError``: the judge's own memory cap)."""


Scan = Callable[[str, int], tuple[Any, int]]


def _scanner(hook: Callable[[dict[str, Any]], Any] | None) -> Scan:
    """The C scanner of a decoder made once (``json.loads`` with an ``object_hook`` makes a new
    decoder, and scanner, for every message)."""
    return json.JSONDecoder(object_hook=hook).scan_once


def _parse(scan: Scan, payload: bytes) -> Any:
    """One JSON value that fills ``payload`` exactly (UTF-8; what :func:`dumps` writes is ASCII).
    Stricter than ``json.loads``, which also took UTF-16/32 and whitespace around the value: only
    a sandbox that breaks the protocol sends those. Raises what :data:`_DECODE_ERRORS` lists."""
    text = payload.decode()
    try:
        value, end = scan(text, 0)
    except StopIteration as exc:  # the scanner's way of saying "no value here"
        raise ValueError(f"expecting a value at {exc.value}") from None
    if end != len(text):
        raise ValueError(f"extra data at {end}")
    return value


_SCAN_VALUES, _SCAN_PLAIN = _scanner(_decode_tagged), _scanner(None)


def loads(frame: bytes, *, values: bool = True) -> Any:
    """The message in one whole frame made by :func:`dumps` (tagged values rebuilt; no ``r``)."""
    try:
        return _parse(_SCAN_VALUES if values else _SCAN_PLAIN, frame[_HEADER.size :])
    except _DECODE_ERRORS as exc:
        raise CodecError(f"undecodable frame: {exc}") from None


class Budget:
    """What one submission's answers may still cost the judge: bytes and values (see the module)."""

    def __init__(self, size: int = MAX_ANSWER_BYTES, elements: int = MAX_ELEMENTS) -> None:
        self.size, self.elements = size, elements

    def charge(self, payload: bytes) -> bool:
        """Take ``payload``'s share before it is decoded; whether its depth must be checked after
        (more than :data:`MAX_DEPTH` containers in it). Raises :class:`CodecError` when over."""
        self.size -= len(payload)
        if self.size < 0:
            raise CodecError(f"the answers exceed {MAX_ANSWER_BYTES} bytes")
        structure = _STRING.sub(b'""', payload) if len(payload) > SMALL_FRAME else payload
        containers = structure.count(b"[") + structure.count(b"{")
        # every value but the first of a container follows a comma
        self.elements -= containers + structure.count(b",") + 1
        if self.elements < 0:
            raise CodecError(f"the answers hold more than {MAX_ELEMENTS} values")
        return containers > MAX_DEPTH


def check_depth(value: Any) -> None:
    """Raise :class:`CodecError` if ``value`` nests deeper than :data:`MAX_DEPTH` (iteratively:
    the judge's own recursion, comparing or printing it, then stays shallow)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            item = [*item.keys(), *item.values()]
        elif kind not in (list, tuple, set, frozenset):
            continue
        if depth > MAX_DEPTH + 1:  # (the message around the value adds a level)
            raise CodecError(f"value nested deeper than {MAX_DEPTH}")
        stack.extend((inner, depth + 1) for inner in item)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (a pipe takes at most its free space per ``write``)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_frame(fd: int, message: Any) -> None:
    write_all(fd, dumps(message))


class FrameReader:
    """Reads frames from one fd through a buffer: usually one ``read`` per message, not two.

    ``values=True`` rebuilds tagged values while parsing (for sandbox messages); job frames
    from the pool are plain JSON and must not be re-tagged. ``budget``: the judge reading a
    submission's answers charges each frame to it before decoding. ``refs``: how ``r`` values
    are rebuilt (without it they are refused).
    """

    def __init__(
        self, fd: int, *, values: bool = False, budget: Budget | None = None, refs: Refs | None = None
    ) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.refs = refs if values else None
        self.scan: Scan | None = None if self.refs else _SCAN_VALUES if values else _SCAN_PLAIN
        """Made on the first frame when ``refs`` is given (a sandbox's channel usually ends
        unread: the judge's questions were planned ahead)."""
        self.budget = budget

    def _fill(self, needed: int, deadline: float | None) -> None:
        while len(self.buffer) < needed:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                    raise ChannelTimeoutError("no reply before the deadline")
            chunk = os.read(self.fd, max(1 << 16, needed - len(self.buffer)))
            if not chunk:
                raise ChannelClosedError("the other end closed the channel")
            self.buffer += chunk

    def read(self, deadline: float | None = None) -> Any:
        """The next message; a frame over :data:`MAX_FRAME_BYTES` or bad JSON is a CodecError."""
        self._fill(_HEADER.size, deadline)
        (size,) = _HEADER.unpack_from(self.buffer)
        if size > MAX_FRAME_BYTES:
            raise CodecError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
        if self.budget is not None and self.budget.size < size:
            raise CodecError(f"the answers exceed {MAX_ANSWER_BYTES} bytes")
        self._fill(_HEADER.size + size, deadline)
        payload = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
        del self.buffer[: _HEADER.size + size]
        deep = self.budget.charge(payload) if self.budget is not None else False
        if self.scan is None:
            self.scan = _scanner(functools.partial(_decode_tagged, refs=self.refs))
        try:
            message = _parse(self.scan, payload)
        except _DECODE_ERRORS as exc:
            raise CodecError(f"undecodable frame: {exc}") from None
        if deep:
            check_depth(message)
        return message
