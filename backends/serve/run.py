"""Run the server: loopback by default; any other address only with a token."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rlvr_gym.backends.serve.app import ServeOptions, create_server
from rlvr_gym.error import InvalidArgumentError, NotAvailableError, RunFailedError

logger = logging.getLogger("rlvr_gym.backends")

MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1`` or ``localhost``: reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token, and a token too short to guess-proof."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InvalidArgumentError(f"the token must be at least {MIN_TOKEN_CHARS} characters")
    if not is_loopback(host) and token is None:
        raise InvalidArgumentError(
            f"binding {host!r} exposes the envs beyond this machine: give a token "
            "(--token or RLVR_GYM_SERVE_TOKEN), or bind 127.0.0.1"
        )


def uvicorn_config(app: Any, host: str, port: int, options: ServeOptions) -> Any:
    """uvicorn's settings for the wall: WebSocket message cap, keep-alive, connection cap."""
    try:
        import uvicorn
    except ImportError:
        raise NotAvailableError("serving needs uvicorn: pip install 'rlvr-gym[openenv]'") from None
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ws="websockets-sansio",
        ws_max_size=options.max_body_bytes,
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        timeout_keep_alive=5,
        limit_concurrency=options.max_sessions * 2 + 64,
        log_level="warning",
        lifespan="on",
    )


@contextlib.contextmanager
def running(
    env_ids: Sequence[str],
    *,
    knobs: Mapping[str, Mapping[str, Any]] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    options: ServeOptions | None = None,
    start_timeout_s: float = 120.0,
) -> Iterator[str]:
    """The server in a background thread of this process, for notebooks, tests and benchmarks;
    yields its base URL (``port=0``: a free port) and stops it on exit."""
    import uvicorn

    check_bind(host, token)
    options = options or ServeOptions()
    app, _ = create_server(env_ids, knobs, options, token=token)
    server = uvicorn.Server(uvicorn_config(app, host, port, options))
    thread = threading.Thread(target=server.run, name="rlvr-gym-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RunFailedError(f"the server did not start on {host}:{port}")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(30)


def serve(
    env_ids: Sequence[str],
    *,
    knobs: Mapping[str, Mapping[str, Any]] | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    options: ServeOptions | None = None,
) -> None:
    """Serve ``env_ids`` until interrupted (see :mod:`rlvr_gym.backends.serve`)."""
    import uvicorn

    check_bind(host, token)
    options = options or ServeOptions()
    app, hosted = create_server(env_ids, knobs, options, token=token)
    ids = ", ".join(one.env_id for one in hosted)
    print(f"rlvr-gym serve: {ids} on http://{host}:{port} (scoring {options.scoring})", flush=True)
    uvicorn.Server(uvicorn_config(app, host, port, options)).run()


__all__ = ["MIN_TOKEN_CHARS", "check_bind", "is_loopback", "running", "serve", "uvicorn_config"]
