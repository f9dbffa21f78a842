"""Command-line flags made from dataclasses and signatures, so a flag and its field cannot drift apart.

Each field of a dataclass (:class:`~rlvr_gym.backends.config.RunConfig`, :class:`~rlvr_gym.trainers.eval_config.EvalConfig`, a backend's
``Options``) — or each ``Annotated[type, about(...)]`` parameter of a function — becomes
one flag: ``--field-name`` unless its metadata names another (``flag``;
``None`` for a field with no flag), its argparse type from the type hint (``bool`` a
``--x/--no-x`` pair, ``Literal`` choices, ``X | None`` as ``X``, ``tuple`` a list, ``dict``
repeatable ``KEY=VALUE``), its help from ``metadata["help"]`` with the field's default appended.
A field of dataclass type (``LaunchSpec``) contributes its own fields' flags.

Flags have no argparse default: only what the user typed reaches the namespace, and
:func:`given` hands back exactly those fields, so the dataclass's own defaults fill the rest —
one source of defaults, and a preset (the tiny-model demo) still loses to a typed flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from rlvr_gym.error import InvalidArgumentError


def parse_env_args(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs into kwargs; values are JSON when they parse as JSON, else strings."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.isidentifier():
            raise InvalidArgumentError(
                f"--env-arg expects key=value with a Python identifier as key, got {pair!r}"
            )
        try:
            kwargs[key] = json.loads(raw)
        except json.JSONDecodeError:
            kwargs[key] = raw
    return kwargs


@dataclasses.dataclass(frozen=True)
class Param:
    """One flag-able value: a dataclass field or an annotated parameter."""

    name: str
    hint: Any
    default: Any
    metadata: typing.Mapping[str, Any]


def params_of(source: type | Callable[..., Any]) -> Iterator[Param]:
    """A dataclass's fields, or a function's parameters annotated ``Annotated[type, about(...)]``."""
    if dataclasses.is_dataclass(source):
        hints = get_type_hints(source)
        for f in dataclasses.fields(source):
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            yield Param(f.name, hints[f.name], default, f.metadata)
        return
    hints = get_type_hints(source, include_extras=True)
    for name, parameter in inspect.signature(source).parameters.items():
        hint = hints.get(name)
        if get_origin(hint) is Annotated and isinstance(hint.__metadata__[0], dict):
            yield Param(name, get_args(hint)[0], parameter.default, hint.__metadata__[0])


def flag_of(field: Param | dataclasses.Field) -> str | None:
    """The flag a field is set by (``--field-name`` unless its metadata says otherwise)."""
    return field.metadata.get("flag", "--" + field.name.replace("_", "-"))


def _unwrap_optional(hint: Any) -> Any:
    if get_origin(hint) in (Union, getattr(typing, "UnionType", Union)) or type(hint).__name__ == "UnionType":
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        if str in args:  # str | Path: a path is typed as text
            return str
    return hint


def _default_text(field: Param) -> str:
    if "cli_default" in field.metadata:  # the command fills this in itself (see ``about``)
        return f" (default: {field.metadata['cli_default']})"
    value = field.default
    if value is dataclasses.MISSING or value is inspect.Parameter.empty:
        return ""
    if value is None or value in ((), {}) or dataclasses.is_dataclass(value):
        return ""  # "none" is said by the help text where it means something
    if isinstance(value, bool):
        return f" (default: {'on' if value else 'off'})"
    return f" (default: {value})"


def _argument(field: Param, hint: Any) -> dict[str, Any]:
    """argparse keywords for one field (no default: see the module docstring)."""
    meta = field.metadata
    help_text = meta.get("help", "") + _default_text(field)
    kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": help_text}
    kwargs["metavar"] = meta.get("metavar", flag_of(field).lstrip("-").replace("-", "_").upper())
    if "type" in meta:  # the flag's own form: a scalar (``--lora-r``) or a list (``--k 1 4``)
        extra = {"nargs": "+", "action": "extend", "metavar": None} if meta.get("many") else {}
        return {**kwargs, "type": meta["type"], **extra}
    hint = _unwrap_optional(hint)
    origin = get_origin(hint)
    if hint is bool:
        del kwargs["metavar"]
        return {**kwargs, "action": argparse.BooleanOptionalAction}
    if origin is Literal:
        choices = get_args(hint)
        return {**kwargs, "type": type(choices[0]), "choices": choices, "metavar": None}
    if origin is tuple:
        return {**kwargs, "nargs": "+", "action": "extend", "choices": meta.get("choices"), "metavar": None}
    if origin is dict:
        return {**kwargs, "action": "append"}
    if hint in (int, float, str):
        return {**kwargs, "type": hint}
    raise TypeError(f"no command-line form for field {field.name!r} of type {hint!r}")


def _walk(cls: type | Callable[..., Any], dest: str = "") -> Iterator[tuple[Param, Any, str]]:
    """``(param, hint, dest)`` for every flag-bearing field, descending into dataclass fields."""
    for field in params_of(cls):
        hint = field.hint
        name = dest + field.name
        if flag_of(field) is None:
            continue
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            yield from _walk(hint, name + ".")
        else:
            yield field, hint, name


def add_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type | Callable[..., Any],
    *,
    dest: str = "",
    only: Sequence[str] | None = None,
    required: Sequence[str] = (),
) -> None:
    """One flag per field of ``cls`` (``only`` those named); ``dest`` prefixes the namespace names."""
    for field, hint, name in _walk(cls, dest):
        if only is not None and field.name not in only:
            continue
        kwargs = _argument(field, hint)
        if field.name in required:
            kwargs.update(required=True)
        parser.add_argument(flag_of(field), dest=name, **kwargs)


def given(args: argparse.Namespace, cls: type | Callable[..., Any], *, dest: str = "") -> dict[str, Any]:
    """The fields of ``cls`` the user set on the command line, as values the dataclass takes."""
    values: dict[str, Any] = {}
    for field in params_of(cls):
        hint, name = field.hint, dest + field.name
        if flag_of(field) is None:
            continue
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            inner = given(args, hint, dest=name + ".")
            if inner:
                values[field.name] = hint(**inner)
            continue
        if not hasattr(args, name):
            continue
        value = getattr(args, name)
        if "convert" in field.metadata:
            value = field.metadata["convert"](value)
        elif get_origin(_unwrap_optional(hint)) is dict:
            value = parse_env_args(value)
        elif get_origin(_unwrap_optional(hint)) is tuple or field.metadata.get("many"):
            value = tuple(value)
        values[field.name] = value
    return values


def flags_given(args: argparse.Namespace, cls: type | Callable[..., Any], *, dest: str = "") -> list[str]:
    """The flags of ``cls`` that were typed (for messages naming them)."""
    return [flag_of(f) for f, _, name in _walk(cls, dest) if hasattr(args, name)]
