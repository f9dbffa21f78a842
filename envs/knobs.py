"""Env knobs typed by their declared types, so ``hardened="False"`` means ``False``.

A knob reaches ``make`` as text more often than not (``--env-arg KEY=VALUE``, a YAML or JSON
config, an environment variable, a run's ``config.json``). Python's ``bool("False")`` is
``True``, so an env that only calls ``bool()`` on it switches the option *on*. :func:`typed_kwargs`
reads each knob's type from the env's config dataclass (:mod:`rlvr_gym.envs.config`) or, for an
env without one, from the annotations of its ``__init__`` (every class of its MRO; for a factory
function, its own parameters and the class its return annotation names), and converts by it:

- ``bool``: ``True``/``False``, the words ``true false yes no on off`` (any case) and ``1``/``0``;
- ``int``: integers and integer text (``"8"``); ``float``: numbers and number text;
- ``str``: text only; ``Literal[...]``: one of its values; ``X | None``: ``None`` or an ``X``;
- ``Path``: a path or non-empty text;
- ``tuple[X, ...]``: a list or tuple of ``X`` (a JSON list read back from a run folder);
- a dataclass (``Limits``): itself, or a mapping of its fields.

A value that does not convert is refused in one line naming the knob, what it wants and what it
got. Knobs of any other type (a sandbox pool, a path) pass through untouched: the env checks
those itself.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

from rlvr_gym.error import (
    KnobTypeError,  # noqa: F401 - defined with the whole tree
)

TRUE = frozenset({"true", "yes", "on", "1"})
FALSE = frozenset({"false", "no", "off", "0"})
SCALARS = (bool, int, float, str)


class _NotConvertible(Exception):
    """:func:`convert`: this value is not one of this type (:func:`typed_kwargs` words it for users)."""


def knob_sources(factory: Callable[..., Any]) -> list[Any]:
    """What declares ``factory``'s knobs, most derived first: along a class's MRO, each class's
    own config dataclass (``config_class``, which holds its bases' knobs too, so the walk stops
    there) or else its ``__init__``; for a function, itself and then the class its return
    annotation names."""
    if isinstance(factory, type):
        sources: list[Any] = []
        classes: tuple[type, ...] = factory.__mro__
    else:
        sources = [factory]
        returned = _hints(factory).get("return")
        classes = returned.__mro__ if isinstance(returned, type) else ()
    for cls in classes:
        own = vars(cls).get("config_class")
        if _is_dataclass(own):
            return [*sources, own]
        if "__init__" in vars(cls):
            sources.append(cls.__init__)
    return sources


def knob_hints(factory: Callable[..., Any]) -> dict[str, Any]:
    """Each knob's type, from :func:`knob_sources`: a config's fields, an ``__init__``'s annotations
    (the most derived source wins)."""
    hints: dict[str, Any] = {}
    for source in knob_sources(factory):
        for name, hint in _hints(source).items():
            if name != "return":
                hints.setdefault(name, hint)
    return hints


def _hints(function: Any) -> dict[str, Any]:
    """``typing.get_type_hints`` (of a function or a dataclass); none when an annotation does not
    resolve (a name imported only for type checkers): those knobs then pass untyped, as before."""
    try:
        return typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - any failure to resolve means "untyped", never a failed make()
        return {}


def typed_kwargs(factory: Callable[..., Any], kwargs: Mapping[str, Any], env_id: str) -> dict[str, Any]:
    """``kwargs`` with each annotated scalar knob converted by its annotation (see the module
    docs); raises :class:`KnobTypeError` naming the first knob whose value does not convert."""
    hints = knob_hints(factory)
    typed = dict(kwargs)
    for name, value in kwargs.items():
        hint = hints.get(name)
        if hint is None:
            continue
        try:
            typed[name] = convert(value, hint)
        except _NotConvertible:
            raise knob_error(name, value, hint, owner=f"env {env_id!r}") from None
    return typed


def knob_error(name: str, value: Any, hint: Any, *, owner: str) -> KnobTypeError:
    """The one-line refusal of a knob whose value is not of its type."""
    return KnobTypeError(
        f"{owner}: knob {name}={value!r} is not {describe(hint)}{' (true or false)' if _is(hint, bool) else ''}"
    )


def _is(hint: Any, kind: type) -> bool:
    return hint is kind or kind in _union_args(hint)


def _union_args(hint: Any) -> tuple[Any, ...]:
    return get_args(hint) if get_origin(hint) in (Union, UnionType) else ()


def _handled(hint: Any) -> bool:
    """Whether this module types ``hint`` (else values pass through)."""
    if hint in SCALARS or hint is NoneType or hint is Path:
        return True
    if get_origin(hint) is Literal:
        return all(isinstance(choice, SCALARS) for choice in get_args(hint))
    if _tuple_of(hint) is not None or _is_dataclass(hint):
        return True
    args = _union_args(hint)
    return bool(args) and all(_handled(arg) for arg in args)


def _tuple_of(hint: Any) -> Any:
    """``X`` for ``tuple[X, ...]`` (else ``None``)."""
    args = get_args(hint)
    return args[0] if get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis else None


def _is_dataclass(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def convert(value: Any, hint: Any) -> Any:
    """``value`` as the type ``hint`` names; raises ``_NotConvertible`` when it is not one."""
    if not _handled(hint):
        return value
    if get_origin(hint) is Literal:
        return _literal(value, get_args(hint))
    if (item := _tuple_of(hint)) is not None:
        if not isinstance(value, list | tuple):  # not text: "abc" is no list of three knobs
            raise _NotConvertible
        return tuple(convert(v, item) for v in value)
    if _is_dataclass(hint):
        return _dataclass(value, hint)
    if hint is Path:
        if isinstance(value, str | os.PathLike) and os.fspath(value):
            return Path(value)
        raise _NotConvertible
    args = _union_args(hint)
    if args:
        for arg in args:  # a value already of one of the types stays as it is
            if arg is NoneType and value is None or arg in SCALARS and _exactly(value, arg):
                return value
            if (_is_dataclass(arg) or arg is Path) and isinstance(value, arg):
                return value
        for arg in args:
            try:
                return convert(value, arg)
            except _NotConvertible:
                continue
        raise _NotConvertible
    if hint is NoneType:
        if value is None or isinstance(value, str) and value.strip().lower() in ("none", "null"):
            return None
        raise _NotConvertible
    return _scalar(value, hint)


def _dataclass(value: Any, kind: type) -> Any:
    """``value`` if it is a ``kind``; a mapping of its fields made into one (its own checks run)."""
    if isinstance(value, kind):
        return value
    if not isinstance(value, Mapping) or set(value) - {f.name for f in dataclasses.fields(kind)}:
        raise _NotConvertible
    return kind(**value)


def _exactly(value: Any, kind: type) -> bool:
    """``isinstance`` without ``True`` counting as an ``int`` (or ``1`` as a ``float`` worth keeping)."""
    if kind is bool:
        return isinstance(value, bool)
    return isinstance(value, kind) and not isinstance(value, bool)


def _scalar(value: Any, kind: type) -> Any:
    if _exactly(value, kind):
        return value
    if kind is bool:
        if isinstance(value, str) and value.strip().lower() in TRUE | FALSE:
            return value.strip().lower() in TRUE
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
    elif kind is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
    elif kind is float:
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
    raise _NotConvertible


def _literal(value: Any, choices: tuple[Any, ...]) -> Any:
    for choice in choices:
        if value == choice and type(value) is type(choice):
            return choice
    for choice in choices:
        try:
            if _scalar(value, type(choice)) == choice:
                return choice
        except _NotConvertible:
            continue
    raise _NotConvertible


def describe(hint: Any) -> str:
    """``an int``, ``one of 'chat', 'text'``, ``a float or None``: what a knob wants, in words."""
    if get_origin(hint) is Literal:
        return "one of " + ", ".join(repr(c) for c in get_args(hint))
    if (item := _tuple_of(hint)) is not None:
        return f"a list of {describe(item).removeprefix('an ').removeprefix('a ')}"
    if _is_dataclass(hint):
        return f"a {hint.__name__} (or a mapping of its fields)"
    args = _union_args(hint)
    if args:
        return " or ".join(describe(arg) for arg in args)
    words = {bool: "a bool", int: "an int", float: "a number", str: "text", NoneType: "None", Path: "a path"}
    return words.get(hint, getattr(hint, "__name__", str(hint)))


__all__ = [
    "KnobTypeError",
    "_NotConvertible",
    "convert",
    "describe",
    "knob_error",
    "knob_hints",
    "knob_sources",
    "typed_kwargs",
]
