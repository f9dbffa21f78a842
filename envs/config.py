"""Typed per-env configs: one frozen dataclass per env family is the one source of its knobs.

Reasoning-gym gives each task a ``*Config`` dataclass (``BasicArithmeticDatasetConfig``...);
ours do the same, and add what the command line and the docs need: each field's ``help`` in its
metadata (:func:`knob`). From that one class come

- the env's knobs: ``ArithEnv(ArithConfig(num_steps=3))``, ``ArithEnv(num_steps=3)`` and
  ``make("arith", num_steps="3")`` all build the same config;
- their types: :meth:`EnvConfig.__post_init__` converts each value by its field's type
  (:mod:`rlvr_gym.envs.knobs`: ``"false"`` is ``False``, a JSON list is a tuple, a mapping is a
  ``Limits``), then :meth:`EnvConfig.validate` checks what a type cannot say (ranges), raising
  :class:`~rlvr_gym.error.InvalidArgumentError` — never ``assert`` (reasoning-gym's ``validate``
  asserts, which ``python -O`` turns off);
- their defaults and help: ``rlvr-gym envs ID --knobs`` and the knob tables of
  ``docs/catalogue.md`` (:func:`knobs_markdown`, checked against the docs by a test);
- the run folder's record: :func:`record` writes each value as JSON by its type (a path as text,
  a tuple as a list, a ``Limits`` as a mapping) and ``make`` types it back the same on resume
  and eval. A live object (a sandbox pool) is not a setting and is not recorded.

Envs without a config (column-mapping envs, a user's registered class) keep the older path:
knobs typed by their ``__init__`` annotations.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from typing import Any, Literal, TypeVar

from rlvr_gym.envs.knobs import _NotConvertible, convert, describe, knob_error, knob_hints, knob_sources
from rlvr_gym.error import EnvArgumentError, InvalidTypeError

C = TypeVar("C", bound="EnvConfig")


def knob(default: Any = MISSING, help: str = "", *, kind: str | None = None) -> Any:  # noqa: A002
    """A config field: its default and one line of help (what ``rlvr-gym envs ID --knobs`` and the
    catalogue print); ``kind`` words a type :func:`~rlvr_gym.envs.knobs.describe` cannot."""
    return field(default=default, metadata={"help": help, **({"kind": kind} if kind else {})})


@dataclass(frozen=True)
class EnvConfig:
    """The knobs every env takes; each env family's config adds its own fields."""

    prompt_format: Literal["chat", "text"] = knob("chat", "chat messages, or one text prompt")
    system_prompt: str | None = knob(None, "the system message (none: the env's own)")

    def __post_init__(self) -> None:
        hints = field_types(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            try:
                typed = convert(value, hints[f.name])
            except _NotConvertible:
                raise knob_error(f.name, value, hints[f.name], owner=type(self).__name__) from None
            object.__setattr__(self, f.name, typed)
        self.validate()

    def validate(self) -> None:
        """Checks a type cannot say (ranges, allowed letters); raise ``InvalidArgumentError``."""

    @classmethod
    def of(cls: type[C], config: C | None, knobs: Mapping[str, Any]) -> C:
        """The config an env is built with: ``config`` (default: the defaults) with ``knobs`` on top."""
        if config is not None and not isinstance(config, cls):
            raise InvalidTypeError(f"expected a {cls.__name__}, got {type(config).__name__}")
        check_names(cls, knobs, cls.__name__)
        return dataclasses.replace(config, **knobs) if config is not None else cls(**knobs)

    def changed(self) -> dict[str, Any]:
        """The knobs set away from their defaults (``RunConfig(env_kwargs=ArithConfig(...))``
        keeps these: the run's record names what was chosen, as ``--env-arg`` does)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.default is MISSING or getattr(self, f.name) != f.default
        }

    def env_options(self) -> dict[str, Any]:
        """The base env's own keywords (``prompt_format``, ``system_prompt``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(EnvConfig)}


@dataclass(frozen=True)
class ToolEnvConfig(EnvConfig):
    """The knobs every tool (multi-turn) env takes; its config adds its own fields."""

    max_turns: int | None = knob(None, "assistant messages per episode (none: the env's own)")
    episode_time_s: float | None = knob(
        None, "seconds an episode's tool calls may take in all (none: the env's own)"
    )

    def tool_options(self) -> dict[str, Any]:
        """The multi-turn base's own keywords (``max_turns``, ``episode_time_s``)."""
        return {"max_turns": self.max_turns, "episode_time_s": self.episode_time_s}


def configure(env: Any, config: EnvConfig | None, knobs: Mapping[str, Any]) -> Any:
    """Build ``env.env_config`` (an instance of ``type(env).config_class``) from ``config`` and
    ``knobs``, and return it: the first line of a config env's ``__init__``.

    In a chain of ``__init__``\\ s (``GSM8KPythonEnv`` -> ``PythonToolEnv`` -> ``MultiTurnEnv`` ->
    ``GSM8KEnv``) the first one builds the config; a base reached later through ``super()``
    with no config reuses it (with whatever keywords a base in between forwarded, the same
    values), so one config is built and every class reads the same one.
    """
    built = vars(env).get("env_config")
    if config is None and built is not None and not knobs:
        return built  # a base reached through super(): the config is built and checked already
    base = built if config is None and built is not None else config
    env.env_config = type(env).config_class.of(base, knobs)
    return env.env_config


def field_types(cls: type) -> dict[str, Any]:
    """Each field's resolved type (``from __future__ import annotations`` leaves text)."""
    return typing.get_type_hints(cls)


def check_names(cls: type[EnvConfig], names: typing.Iterable[str], owner: str) -> None:
    """Raise :class:`EnvArgumentError` for a knob ``cls`` has no field for, naming the close one."""
    known = [f.name for f in dataclasses.fields(cls)]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; it takes {sorted(known)}"
            raise EnvArgumentError(f"{owner} got an unexpected argument {name!r}{hint}")


def config_of(factory: Callable[..., Any] | type) -> type[EnvConfig] | None:
    """The config class that holds every knob of an env class (or of a factory, through the class
    it returns): its own ``config_class``, or a base's when the classes (or the factory) between
    add no keyword of their own (``MbppSampleEnv``). ``None``
    for an env without one, or whose subclass adds ``__init__`` knobs (``code-v0``'s column
    names over ``CodeEnv``'s config): :func:`knobs_of` then merges both sources."""
    for source in knob_sources(factory):
        if isinstance(source, type):
            return source if issubclass(source, EnvConfig) else None
        parameters = inspect.signature(source).parameters.values()
        if any(p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self" for p in parameters):
            return None
    return None


@dataclass(frozen=True)
class Knob:
    """One knob as the CLI and the docs show it."""

    name: str
    type: str
    default: str
    help: str


def knobs_of(factory: Callable[..., Any] | type) -> list[Knob]:
    """Every knob of an env class or factory, or of a config class (:func:`~rlvr_gym.envs.knobs.knob_sources`): its name,
    type in words, default and help — from a config's fields, else from ``__init__`` signatures
    (no help there: an env without a config has none to give)."""
    sources = (
        [factory] if isinstance(factory, type) and issubclass(factory, EnvConfig) else knob_sources(factory)
    )
    hints = field_types(factory) if sources == [factory] else knob_hints(factory)
    found: dict[str, tuple[str, str]] = {}
    kinds: dict[str, str | None] = {}
    for source in sources:
        if dataclasses.is_dataclass(source):
            for f in dataclasses.fields(source):
                default = "(required)" if f.default is MISSING else repr(f.default)
                found.setdefault(f.name, (default, f.metadata.get("help", "")))
                kinds.setdefault(f.name, f.metadata.get("kind"))
            continue
        for p in inspect.signature(source).parameters.values():
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self":
                default = "(required)" if p.default is p.empty else repr(p.default)
                found.setdefault(p.name, (default, ""))
    return [
        Knob(name, kinds.get(name) or (describe(hints[name]) if name in hints else "any"), default, help_text)
        for name, (default, help_text) in found.items()
    ]


def knobs_markdown(configs: Mapping[str, type[EnvConfig]]) -> str:
    """One table per config (the base knobs once, first), headed by the env ids that use it:
    the block ``docs/catalogue.md`` holds (``rlvr-gym envs --knobs --markdown`` prints it)."""
    lines = ["Knobs every env takes:", "", *_table(knobs_of(EnvConfig))]
    base = {f.name for f in dataclasses.fields(EnvConfig)}
    users: dict[type[EnvConfig], list[str]] = {}
    for env_id, cls in configs.items():
        users.setdefault(cls, []).append(env_id)
    for cls, ids in users.items():
        own = [k for k in knobs_of(cls) if k.name not in base]
        lines += ["", f"{_ids(ids)} (`{cls.__name__}`):", "", *_table(own)]
    return "\n".join(lines)


def _ids(ids: list[str]) -> str:
    """The env ids a table is for; a namespace's many ids as one (``reasoning_gym/<name>-v0`` (106))."""
    namespaces = {i.partition("/")[0] for i in ids}
    if len(ids) > 3 and len(namespaces) == 1 and "/" in ids[0]:
        return f"`{ids[0].partition('/')[0]}/<name>-v0` ({len(ids)})"
    return ", ".join(f"`{i}`" for i in ids)


def _table(knobs: list[Knob]) -> list[str]:
    rows = ["| knob | type | default | what it sets |", "| --- | --- | --- | --- |"]
    return rows + [f"| `{k.name}` | {k.type} | `{k.default}` | {k.help.replace('|', '/')} |" for k in knobs]


NOT_RECORDED = object()
""":func:`record_value` for a live object: left out of the record."""


def record_value(value: Any) -> Any:
    """``value`` as JSON data: a path as text, a tuple as a list, a dataclass as a mapping;
    :data:`NOT_RECORDED` for anything else that JSON cannot carry (a live object)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, list | tuple):
        items = [record_value(item) for item in value]
        return NOT_RECORDED if any(item is NOT_RECORDED for item in items) else items
    if isinstance(value, Mapping):
        pairs = {str(k): record_value(v) for k, v in value.items()}
        return NOT_RECORDED if any(v is NOT_RECORDED for v in pairs.values()) else pairs
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return record_value({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return NOT_RECORDED


def record(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The knobs ``kwargs`` as JSON data for a run folder (:func:`record_value`); ``make`` types
    them back by the env's config. A value JSON cannot carry (a live sandbox pool) is left out:
    it is an object, not a setting."""
    recorded = {}
    for name, value in kwargs.items():
        data = record_value(value)
        if data is not NOT_RECORDED:
            recorded[name] = data
    return recorded


def settings_of(env: Any) -> dict[str, Any]:
    """The knobs ``env`` was made with (its spec's typed kwargs) as :func:`record` writes them;
    ``{}`` for an env built by hand (it has no spec)."""
    spec = getattr(env, "spec", None)
    return {} if spec is None else record(spec.kwargs)


__all__ = [
    "EnvConfig",
    "ToolEnvConfig",
    "configure",
    "Knob",
    "check_names",
    "config_of",
    "knob",
    "knobs_markdown",
    "knobs_of",
    "record",
    "record_value",
    "settings_of",
]
