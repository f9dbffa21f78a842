"""The ASGI app of ``rlvr-gym serve``: each env on OpenEnv's own server, under one root.

Layout (``ID`` is the registered id, e.g. ``gsm8k-v0``; the name given on the command line,
e.g. ``gsm8k``, is an alias of it)::

    GET  /                 the envs served, their settings (knobs), splits and sizes
    GET  /health
    /ID/...                OpenEnv's app for that env: /ws (sessions), /reset, /step, /state,
                           /schema, /metadata, /health — built by ``openenv``'s ``create_app``
    POST /ID/score         the batch endpoint (see :mod:`.batch`)

With one env served, its routes also answer at the root (``GenericEnvClient("http://host:port")``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlvr_gym import envs
from rlvr_gym.backends.scoring import Scorer, make_scorer
from rlvr_gym.backends.serve.batching import Batcher
from rlvr_gym.backends.serve.guard import Guard
from rlvr_gym.backends.serve.journal import Journal
from rlvr_gym.envs.config import settings_of
from rlvr_gym.error import Error, InvalidArgumentError, NotAvailableError

if TYPE_CHECKING:  # the session module imports OpenEnv: loaded once a server is built
    from rlvr_gym.backends.serve.session import HostedEnv


@dataclass(frozen=True)
class ServeOptions:
    """What bounds the server: sessions, bodies, batch sizes, and the scoring backend."""

    max_sessions: int = 1024
    """Concurrent WebSocket sessions per env; one more is refused with OpenEnv's CAPACITY_REACHED."""
    session_timeout_s: float | None = 600.0
    """A session idle this long is closed (a client that went silent frees its slot)."""
    max_body_bytes: int = 4 * 2**20
    """Largest request body or WebSocket message."""
    max_batch_items: int = 4096
    """Largest batch the score endpoint takes in one request."""
    max_pending: int = 16384
    """Items waiting to be scored per env, past which requests are refused (server busy)."""
    score_batch: int = 256
    """Items per Scorer call."""
    score_timeout_s: float | None = 120.0
    """The budget of one Scorer call; items past it come back unscored (None), never zeroed."""
    tool_threads: int = 16
    """Threads that play tool envs' turns (their tool calls run in the sandbox)."""
    scoring: str = "local"
    ray_address: str | None = None
    verdict_log: str | None = None
    """A file that gets every answered verdict, on disk before the answer is sent (:mod:`.journal`)."""

    def __post_init__(self) -> None:
        for name in (
            "max_sessions",
            "max_body_bytes",
            "max_batch_items",
            "max_pending",
            "score_batch",
            "tool_threads",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")


def _openenv() -> Any:
    try:
        from openenv.core.env_server import http_server
    except ImportError as exc:
        raise NotAvailableError(f"serving needs OpenEnv: pip install 'rlvr-gym[openenv]' ({exc})") from None
    return http_server


def host_env(name: str, knobs: Mapping[str, Any], options: ServeOptions, served: int = 1) -> HostedEnv:
    """Make env ``name`` with ``knobs`` and its scorer, and load its first split (so a
    broken dataset fails at start, not in the first session). ``served``: the envs this server
    hosts; on Ray their scorers share the cluster's CPUs (``shared_by``), or the first env's
    actors would take every CPU and the next env's would never start."""
    from rlvr_gym.backends.serve.session import HostedEnv

    env = envs.make(name, **knobs)
    env.tasks(env.splits[0])
    sharing = {"shared_by": served} if options.scoring == "ray" else {}
    scorer: Scorer = make_scorer(env, options.scoring, ray_address=options.ray_address, **sharing)
    batcher = Batcher(
        scorer,
        max_batch=options.score_batch,
        max_pending=options.max_pending,
        timeout_s=options.score_timeout_s,
    )
    settings = settings_of(env)  # as make typed them ("false" for a bool knob is false)
    hosted = HostedEnv(env.id, env, settings, batcher, scorer=scorer)
    if hosted.is_tool_env:
        hosted.tool_pool = ThreadPoolExecutor(options.tool_threads, thread_name_prefix=f"serve-{env.id}")
        hosted.tools = env.tool_schemas()  # type: ignore[attr-defined]
    spec = envs.spec(env.id)
    hosted.info = {
        "id": env.id,
        "summary": spec.summary(),
        "settings": settings,
        "splits": {split: None for split in env.splits},
        "tool_env": hosted.is_tool_env,
        "prompt_format": env.prompt_format,
    }
    hosted.info["splits"][env.splits[0]] = len(env.tasks(env.splits[0]))
    return hosted


def env_app(hosted: HostedEnv, options: ServeOptions) -> Any:
    """OpenEnv's FastAPI app for one hosted env, plus its ``/score`` batch route."""
    http_server = _openenv()
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.types import ConcurrencyConfig

    from rlvr_gym.backends.serve.batch import score_router
    from rlvr_gym.backends.serve.session import EnvAction, EnvObservation, ServedEnv

    app = http_server.create_app(
        functools.partial(ServedEnv, hosted),
        EnvAction,
        EnvObservation,
        env_name=hosted.env_id,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=options.max_sessions, session_timeout=options.session_timeout_s
        ),
    )

    async def refused(request: Request, exc: Exception) -> JSONResponse:  # our refusals, as 409s
        return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=409)

    app.add_exception_handler(Error, refused)
    app.include_router(score_router(hosted, options))
    return app


def create_server(
    env_ids: Sequence[str],
    knobs: Mapping[str, Mapping[str, Any]] | None = None,
    options: ServeOptions | None = None,
    *,
    token: str | None = None,
) -> tuple[Any, list[HostedEnv]]:
    """The whole server app (guarded) and the envs it hosts; ``knobs`` maps a name to its settings."""
    options = options or ServeOptions()
    knobs = knobs or {}
    if not env_ids:
        raise InvalidArgumentError("name at least one env to serve")
    unknown = sorted(set(knobs) - set(env_ids))
    if unknown:
        raise InvalidArgumentError(f"settings given for envs not served: {unknown}")
    _openenv()
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    hosted: dict[str, HostedEnv] = {}
    aliases: dict[str, HostedEnv] = {}
    journal = Journal(options.verdict_log) if options.verdict_log else None
    try:
        for name in env_ids:
            one = host_env(name, knobs.get(name, {}), options, served=len(env_ids))
            one.journal = journal
            if one.env_id in hosted:
                one.close()
                raise InvalidArgumentError(f"{name!r} is {one.env_id!r}, named twice")
            hosted[one.env_id] = aliases[name] = one
    except BaseException:  # an env that cannot be hosted: free the workers of those made before it
        for one in reversed(list(hosted.values())):
            with contextlib.suppress(Exception):
                one.close()
        if journal is not None:
            journal.close()
        raise

    apps = {env_id: env_app(one, options) for env_id, one in hosted.items()}

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        """Run each env app's own startup (OpenEnv's idle-session reaper: mounted apps' events
        do not run by themselves), and free every env's workers at shutdown."""
        async with contextlib.AsyncExitStack() as stack:
            for app in apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            try:
                yield
            finally:
                for one in hosted.values():
                    await one.batcher.aclose()
                    one.close()
                if journal is not None:
                    journal.close()

    root = FastAPI(title="rlvr-gym serve", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @root.get("/")
    def index() -> dict[str, Any]:
        return {"envs": {env_id: one.info for env_id, one in hosted.items()}}

    @root.get("/health")
    def health() -> dict[str, str]:
        return {"status": "healthy"}

    @root.exception_handler(HTTPException)
    async def not_found(request: Request, exc: HTTPException) -> JSONResponse:
        detail = exc.detail
        if exc.status_code == 404:
            detail = (
                f"no such path {request.url.path!r}; envs are served under /{'/, /'.join(sorted(hosted))}/"
            )
        return JSONResponse({"detail": detail}, status_code=exc.status_code)

    for name, one in aliases.items():
        if name != one.env_id:
            root.mount(f"/{name}", apps[one.env_id])
    for env_id, app in apps.items():
        root.mount(f"/{env_id}", app)
    if len(apps) == 1:
        root.mount("/", next(iter(apps.values())))

    return Guard(root, token=token, max_body=options.max_body_bytes), list(hosted.values())


__all__ = ["ServeOptions", "create_server", "env_app", "host_env"]
