"""Env knobs typed by their annotations, so ``hardened="False"`` means ``False``.

A knob reaches ``make`` as text more often than not (``--env-arg KEY=VALUE``, a YAML or JSON
config, an environment variable). Python's ``bool("False")`` is ``True``, so an env that only
calls ``bool()`` on it switches the option *on*. :func:`typed_kwargs` reads the annotation of each
knob from the env's ``__init__`` (every class of its MRO; for a factory function, its own
parameters and the class its return annotation names) and converts the value by it:

- ``bool``: ``True``/``False``, the words ``true false yes no on off`` (any case) and ``1``/``0``;
- ``int``: integers and integer text (``"8"``); ``float``: numbers and number text;
- ``str``: text only; ``Literal[...]``: one of its values; ``X | None``: ``None`` or an ``X``.

A value that does not convert is refused in one line naming the knob, what it wants and what it
got. Knobs of any other type (a ``Limits``, a sequence, a path) pass through untouched: the env
checks those itself.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
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


def knob_hints(factory: Callable[..., Any]) -> dict[str, Any]:
    """Each keyword's annotation, from ``factory``'s ``__init__``\\ s (subclass first) or, for a
    function, from its parameters and then from the class its return annotation names."""
    if isinstance(factory, type):
        functions: list[Any] = [c.__init__ for c in factory.__mro__ if "__init__" in vars(c)]
    else:
        functions = [factory]
        returned = _hints(factory).get("return")
        if isinstance(returned, type):
            functions += [c.__init__ for c in returned.__mro__ if "__init__" in vars(c)]
    hints: dict[str, Any] = {}
    for function in functions:
        for name, hint in _hints(function).items():
            if name != "return":
                hints.setdefault(name, hint)
    return hints


def _hints(function: Any) -> dict[str, Any]:
    """``typing.get_type_hints``; none when an annotation does not resolve (a name imported only
    for type checkers): that function's knobs then pass untyped, as before."""
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
            raise KnobTypeError(
                f"env {env_id!r}: knob {name}={value!r} is not {describe(hint)}"
                f"{' (true or false)' if _is(hint, bool) else ''}"
            ) from None
    return typed


def _is(hint: Any, kind: type) -> bool:
    return hint is kind or kind in _union_args(hint)


def _union_args(hint: Any) -> tuple[Any, ...]:
    return get_args(hint) if get_origin(hint) in (Union, UnionType) else ()


def _handled(hint: Any) -> bool:
    """Whether this module types ``hint`` (else values pass through)."""
    if hint in SCALARS or hint is NoneType:
        return True
    if get_origin(hint) is Literal:
        return all(isinstance(choice, SCALARS) for choice in get_args(hint))
    args = _union_args(hint)
    return bool(args) and all(_handled(arg) for arg in args)


def convert(value: Any, hint: Any) -> Any:
    """``value`` as the type ``hint`` names; raises ``_NotConvertible`` when it is not one."""
    if not _handled(hint):
        return value
    if get_origin(hint) is Literal:
        return _literal(value, get_args(hint))
    args = _union_args(hint)
    if args:
        for arg in args:  # a value already of one of the types stays as it is
            if arg is NoneType and value is None or arg in SCALARS and _exactly(value, arg):
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
    args = _union_args(hint)
    if args:
        return " or ".join(describe(arg) for arg in args)
    words = {bool: "a bool", int: "an int", float: "a number", str: "text", NoneType: "None"}
    return words.get(hint, getattr(hint, "__name__", str(hint)))


__all__ = ["KnobTypeError", "_NotConvertible", "convert", "describe", "knob_hints", "typed_kwargs"]
