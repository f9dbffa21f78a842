"""Read-only values that still pickle and deep-copy: what verdicts, rubrics and task rows hold.

``types.MappingProxyType`` is read-only but cannot be pickled, which kept verdicts and envs out of
``multiprocessing``, ``gymnasium.vector.AsyncVectorEnv`` and Ray. :class:`FrozenDict` is a real
``dict`` (``json.dumps`` and ``isinstance(x, dict)`` keep working) whose mutators raise, and
:func:`freeze` / :func:`thaw` convert nested JSON-like data in one call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn


class FrozenDict(dict):
    """A ``dict`` that refuses every change; pickles and deep-copies by value."""

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is read-only; copy it with thaw() or dict() to change it")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


def freeze(value: Any) -> Any:
    """``value`` with every dict made a :class:`FrozenDict` and every list/set a tuple/frozenset."""
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    if isinstance(value, set | frozenset):
        return frozenset(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A fresh, mutable copy of frozen (or plain) JSON-like data: dicts and lists all new."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    if isinstance(value, set | frozenset):
        return {thaw(item) for item in value}
    return value
