"""Values the submission makes that are not plain data: kept in the sandbox, named by a number.

MBPP's tests build objects of the submission's own classes and hand them back to it
(``max_chain_length([Pair(5, 24), ...], 4) == 3``; a trusted setup that grows a ``Node`` tree
with ``root.left = Node(2)``). Such an object cannot become plain data without trusting the
class that made it, and the judge runs none of the submission's code. So it stays where it was
made: the sandbox keeps it (:class:`Kept`) and sends ``{"r": [number, type name]}``; the judge
holds a :class:`Remote`, a handle of its own class that can only be

* passed back as an argument (the sandbox looks the number up),
* called, or have a public attribute read or set, or its truth asked (a request; the answer is
  plain data or another handle), shown (``<Pair in the sandbox>``).

Why this opens no hack — everything a handle does in the judge is the judge's own code:

* **equality and hashing are identity**: a handle equals only itself, never plain data, so a
  forged ``__eq__``/``__hash__`` never runs and an always-equal object is unequal to every
  expected value; each reply makes a fresh handle, so a sandbox that reuses a number cannot
  make two answers one object in the judge (``f(p) is p`` is false even when it holds there);
* **truth is a plain bool the sandbox sends**: ``assert f(x)`` (MBPP's tests of ``re.search``
  results) holds if the sandbox says so, which a submission could have had by returning
  ``True``: a test of truth alone checks nothing more, whoever computes it;
* **no other protocol**: no ``len``, iteration, arithmetic, ordering, ``str`` other than the
  judge's repr: test code that needs them fails the case, as it did when the value was refused;
* **exact types only**: a subclass of ``int`` or ``str`` is not plain data (the codec checks
  ``type(v) is int``), so it arrives as a handle, equal to no int or str;
* **no structural comparison**: the judge never asks the sandbox "are these equal?" — the
  sandbox would see both sides of the question and could answer yes. A test that compares two
  objects of the submission's classes fails; one that compares their attributes
  (``f(x).a == 5``) compares plain data read one attribute at a time, as any answer.

The number and the type name come from the sandbox and are untrusted: a bad number is the
submission's own failure (its sandbox answers an error); the name is only shown, capped.
"""

from __future__ import annotations

from typing import Any, Protocol

from rlvr_gym.verifiers.code.codec import CodecError

TYPE_NAME_CHARS = 60


class Asker(Protocol):
    """The judge's end of one sandbox (:class:`.harness.Session`): the requests a handle makes."""

    def call_ref(self, number: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...

    def get_attribute(self, number: int, name: str) -> Any: ...

    def set_attribute(self, number: int, name: str, value: Any) -> None: ...

    def truth(self, number: int) -> bool: ...


def public(name: str) -> str:
    """``name`` if test code may reach it on a handle: an identifier not starting with ``_``
    (the judge's own probes of special names stay in the judge)."""
    if not name.isidentifier() or name.startswith("_"):
        raise AttributeError(f"{name!r}: only public attributes of a value in the sandbox can be reached")
    return name


class Remote:
    """The judge's handle on a value the sandbox keeps (see the module for what it allows)."""

    __slots__ = ("_asker", "_number", "_type")

    def __init__(self, asker: Asker, number: int, type_name: str) -> None:
        object.__setattr__(self, "_asker", asker)
        object.__setattr__(self, "_number", number)
        object.__setattr__(self, "_type", "".join(c for c in type_name[:TYPE_NAME_CHARS] if c.isprintable()))

    def __getattr__(self, name: str) -> Any:  # only for names the class does not define
        return self._asker.get_attribute(self._number, public(name))

    def __setattr__(self, name: str, value: Any) -> None:
        self._asker.set_attribute(self._number, public(name), value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError("attributes of a value in the sandbox cannot be deleted from the judge")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._asker.call_ref(self._number, args, kwargs)

    def __bool__(self) -> bool:
        return self._asker.truth(self._number)

    def __repr__(self) -> str:
        return f"<{self._type} in the sandbox>"

    __eq__ = object.__eq__  # identity, said out loud: never the submission's
    __hash__ = object.__hash__

    def __reduce__(self) -> Any:
        raise TypeError("a handle on a value in the sandbox cannot be copied or pickled")

    def encoded_for(self, asker: Asker) -> dict[str, Any]:
        """Its ``r`` form for ``asker``'s sandbox; a handle of another sandbox is refused."""
        if self._asker is not asker:
            raise CodecError("a value of another sandbox cannot be sent to this one")
        return {"r": [self._number, self._type]}


class Kept:
    """The sandbox's side: the values it sent as numbers, so the judge can hand them back.

    Lives in the untrusted process (the submission may rewrite it; the judge trusts nothing it
    says). Values are never dropped: a sandbox lives for one submission."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def keep(self, value: Any) -> dict[str, Any]:
        """The ``r`` form of ``value`` (the ``other`` of :func:`.codec.encode_value`)."""
        self.values.append(value)
        return {"r": [len(self.values) - 1, type(value).__name__[:TYPE_NAME_CHARS]]}

    def get(self, number: int, name: str) -> Any:
        """The value numbered ``number`` (the ``refs`` of the sandbox's request reader)."""
        if not 0 <= number < len(self.values):
            raise CodecError(f"no value numbered {number} in this sandbox")
        return self.values[number]
