"""The env registry, in the manner of Gymnasium: ``register``, ``make``, ``spec``, ``registry``.

Ids follow Gymnasium's ``[namespace/]name[-vN]``. The version means something: a change to an
env's tasks or scoring registers a new ``-vN``. An id without a version (``make("gsm8k")``) resolves to the
latest registered version, and ``env.spec.id`` names the exact one. Every env is also registered
in Gymnasium's own registry (:func:`gymnasium_id`: ``gsm8k-v0`` -> ``rlvr_gym/gsm8k-v0``), so
``gymnasium.make`` and ``gymnasium.make_vec`` reach it once ``rlvr_gym.envs`` is imported. Third-party packages add envs through the
entry-point group ``rlvr_gym.envs``: the entry point's *name* is the env id and its *value* the
``module:attr`` of the env class or factory, imported only when the env is made.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from types import MappingProxyType
from typing import Any

from gymnasium import error as gym_error
from gymnasium.envs.registration import EnvSpec as GymEnvSpec
from gymnasium.envs.registration import parse_env_id
from gymnasium.envs.registration import registry as gym_registry

from rlvr_gym.envs.env import GYMNASIUM_NAMESPACE, Env, registry_id
from rlvr_gym.envs.knobs import knob_sources, typed_kwargs
from rlvr_gym.error import (  # noqa: F401 - defined with the whole tree
    DuplicateEnvError,
    EnvArgumentError,
    Error,
    InvalidEnvIdError,
    RegistryError,
    UnknownEnvError,
)

logger = logging.getLogger("rlvr_gym.envs")

ENTRY_POINT_GROUP = "rlvr_gym.envs"
EnvFactory = Callable[..., Env]


@dataclass
class EnvSpec(GymEnvSpec):
    """Gymnasium's EnvSpec plus a one-line ``description`` (by default the env's docstring)."""

    description: str = field(default="")

    def load(self) -> EnvFactory:
        """The env class or factory, importing ``module:attr`` entry points on demand."""
        return load_entry_point(self.entry_point, self.id)

    def summary(self) -> str:
        """One line for listings: the explicit description, else the first docstring line."""
        if self.description:
            return self.description
        try:
            doc = inspect.getdoc(self.load()) or ""
        except RegistryError as exc:
            return f"(cannot load: {exc})"
        return doc.strip().splitlines()[0] if doc.strip() else ""

    def make(self, **overrides: Any) -> Env:
        """A new env from this spec, ``overrides`` on top of the registered defaults."""
        factory = self.load()
        kwargs = {**self.kwargs, **overrides}
        check_kwargs(factory, kwargs, self.id)
        kwargs = typed_kwargs(factory, kwargs, self.id)  # "False" for a bool knob means False
        env = factory(**kwargs)
        if not isinstance(env, Env):
            raise RegistryError(
                f"entry point of {self.id!r} returned {type(env).__name__}, not an rlvr_gym.envs.Env"
            )
        env.spec = dataclasses.replace(self, kwargs=kwargs)
        return env


_registry: dict[str, EnvSpec] = {}
registry: Mapping[str, EnvSpec] = MappingProxyType(_registry)
"""All registered specs by id (read-only; use :func:`register` to add)."""


def load_entry_point(entry_point: EnvFactory | str | None, env_id: str) -> EnvFactory:
    """Resolve ``"module:attr"`` (or return a callable as is), with errors that name the env."""
    if callable(entry_point):
        return entry_point
    if not isinstance(entry_point, str) or ":" not in entry_point:
        raise RegistryError(
            f"entry point of {env_id!r} must be a callable or 'module:attr', got {entry_point!r}"
        )
    module_name, _, attr = entry_point.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise RegistryError(f"cannot load entry point {entry_point!r} of {env_id!r}: {exc}") from exc
    if not callable(target):
        raise RegistryError(f"entry point {entry_point!r} of {env_id!r} is not callable")
    return target


def accepted_kwargs(factory: EnvFactory) -> set[str] | None:
    """Keyword names ``factory`` takes, or ``None`` when it takes any.

    Read from :func:`~rlvr_gym.envs.knobs.knob_sources`: an env's config dataclass lists every
    knob (its bases' too); a class whose ``__init__`` forwards ``**kwargs`` to its base (as envs
    do with ``prompt_format`` and ``system_prompt``) counts the bases' keywords too.
    """
    accepted: set[str] = set()
    # a factory function's **kwargs may be its own: only a class is followed to its bases
    for source in knob_sources(factory) if isinstance(factory, type) else [factory]:
        if dataclasses.is_dataclass(source):
            return accepted | {f.name for f in dataclasses.fields(source)}
        try:
            parameters = inspect.signature(source).parameters.values()
        except (TypeError, ValueError):  # a builtin or C callable: let the call itself speak
            return None
        accepted |= {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            return accepted - {"self"}
    return None


def check_kwargs(factory: EnvFactory, kwargs: Mapping[str, Any], env_id: str) -> None:
    """Raise :class:`EnvArgumentError` naming any keyword ``factory`` does not accept."""
    accepted = accepted_kwargs(factory)
    if accepted is None:
        return
    for name in kwargs:
        if name not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; it takes {sorted(accepted)}"
            raise EnvArgumentError(f"env {env_id!r} got an unexpected argument {name!r}{hint}")


def _validate_id(env_id: object) -> str:
    if not isinstance(env_id, str):
        raise InvalidEnvIdError(f"env id must be a str, got {type(env_id).__name__}")
    try:
        parse_env_id(env_id)
    except gym_error.Error:
        raise InvalidEnvIdError(
            f"malformed env id {env_id!r}: use [namespace/]name[-vN] with letters, digits, '_', '-', '.' "
            "(e.g. 'arith' or 'my-org/capitals-v0')"
        ) from None
    return env_id


def register(
    id: str,  # noqa: A002 - the Gymnasium name for it
    entry_point: EnvFactory | str,
    *,
    description: str = "",
    **defaults: Any,
) -> EnvSpec:
    """Register an env under ``id``. ``defaults`` are keyword arguments every ``make`` gets.

    ``entry_point`` is an env class, a factory returning a ``Env``, or a lazy
    ``"module:attr"`` string. Registering an id twice is an error, and so is an id in the
    ``rlvr_gym/`` namespace (Gymnasium's registry holds every id there already).
    """
    _validate_id(id)
    if registry_id(id) != id:
        raise InvalidEnvIdError(
            f"cannot register {id!r}: {GYMNASIUM_NAMESPACE}/ is the namespace Gymnasium's registry gives "
            f"our ids; register {registry_id(id)!r}"
        )
    if id in _registry:
        raise DuplicateEnvError(f"env {id!r} is already registered (by {_registry[id].entry_point!r})")
    _check_versioning(id)
    if callable(entry_point):
        check_kwargs(entry_point, defaults, id)
    elif not isinstance(entry_point, str) or ":" not in entry_point:
        raise RegistryError(f"entry point of {id!r} must be a callable or 'module:attr', got {entry_point!r}")
    spec = EnvSpec(id=id, entry_point=entry_point, kwargs=dict(defaults), description=description)
    _registry[id] = spec
    gym_id = gymnasium_id(id)
    gym_registry[gym_id] = GymEnvSpec(id=gym_id, entry_point=entry_point, kwargs=dict(defaults))
    return spec


def _check_versioning(id: str) -> None:  # noqa: A002
    """Gymnasium's rule: a name is registered either without a version or with versions, not both
    (else ``make(name)`` would be ambiguous between the bare id and the latest version)."""
    namespace, name, version = parse_env_id(id)
    for other in _registry:
        other_namespace, other_name, other_version = parse_env_id(other)
        if (other_namespace, other_name) == (namespace, name) and (other_version is None) != (
            version is None
        ):
            raise DuplicateEnvError(
                f"cannot register {id!r}: {other!r} is already registered, and a name is registered "
                "with versions (-vN) or without one, not both"
            )


def gymnasium_id(id: str) -> str:  # noqa: A002
    """The id an env has in Gymnasium's registry: ours under the ``rlvr_gym/`` namespace
    (``gsm8k-v0`` -> ``rlvr_gym/gsm8k-v0``); an id with its own namespace keeps it."""
    namespace, _, _ = parse_env_id(_validate_id(id))
    return id if namespace is not None else f"{GYMNASIUM_NAMESPACE}/{id}"


def deregister(id: str) -> None:  # noqa: A002
    """Remove ``id`` from the registry (for tests and interactive sessions)."""
    if id not in _registry:
        spec(id)  # raises the usual error naming close matches
    del _registry[id]
    gym_registry.pop(gymnasium_id(id), None)


def latest_version(id: str) -> str | None:  # noqa: A002
    """For an id without ``-vN``, the registered id of its highest version (``None`` if none)."""
    namespace, name, version = parse_env_id(_validate_id(id))
    if version is not None:
        return None
    versions = []
    for other in _registry:
        other_namespace, other_name, other_version = parse_env_id(other)
        if (other_namespace, other_name) == (namespace, name) and other_version is not None:
            versions.append((other_version, other))
    return max(versions)[1] if versions else None


def spec(id: str) -> EnvSpec:  # noqa: A002
    """The spec registered under ``id``; an id without a version means its latest version, and
    Gymnasium's id (``rlvr_gym/gsm8k-v0``) means ours (``gsm8k-v0``). Unknown ids fail naming the
    closest ones."""
    id = registry_id(_validate_id(id))  # noqa: A001
    found = _registry.get(id)
    if found is None and (latest := latest_version(id)) is not None:
        found = _registry[latest]
    if found is None:
        # suggest what users type: the id without its version (it means the latest one)
        names = {
            other.rpartition("-v")[0] if parse_env_id(other)[2] is not None else other for other in _registry
        }
        close = difflib.get_close_matches(id, sorted(names), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise UnknownEnvError(f"no env registered as {id!r}.{hint} See `rlvr-gym envs` for all ids.")
    return found


def make(id: str, **overrides: Any) -> Env:  # noqa: A002
    """A new env ``id``, with ``overrides`` on top of the registered defaults."""
    return spec(id).make(**overrides)


def load_plugins(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Register the envs third-party packages declare under ``group``; returns the new ids.

    Safe to call again (ids already registered from the same entry point are skipped). A
    broken or conflicting plugin is logged and skipped so it cannot break ``import envs``.
    """
    added = []
    for ep in metadata.entry_points(group=group):
        existing = _registry.get(ep.name)
        if existing is not None:
            if existing.entry_point != ep.value:
                logger.warning(
                    "plugin env %r (%s) ignored: id already registered by %r",
                    ep.name,
                    ep.value,
                    existing.entry_point,
                )
            continue
        try:
            register(ep.name, ep.value)
        except RegistryError as exc:
            logger.warning("plugin env %r from %s ignored: %s", ep.name, getattr(ep.dist, "name", "?"), exc)
            continue
        added.append(ep.name)
    return added
