"""``rlvr-gym serve``: its flags and what it runs (the server is :mod:`rlvr_gym.backends.serve`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from rlvr_gym.backends.scoring import SCORING
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.trainers.flags import parse_env_args

TOKEN_VARIABLE = "RLVR_GYM_SERVE_TOKEN"


def add_serve_args(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` subcommand's flags."""
    from rlvr_gym.backends.serve.app import ServeOptions

    defaults = ServeOptions()
    parser.add_argument("ids", nargs="+", metavar="ENV", help="envs to serve (registered ids or names)")
    parser.add_argument(
        "--env-arg",
        action="append",
        default=[],
        metavar="[ENV:]KEY=VALUE",
        help="an env setting (knob), for every env or only ENV; reported by the server's metadata",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--token",
        default=None,
        help=f"required to bind beyond loopback; clients send it as a Bearer header or a /token/TOKEN/ "
        f"URL prefix (default: ${TOKEN_VARIABLE}, which keeps it out of the process list)",
    )
    parser.add_argument(
        "--scoring", default="local", choices=list(SCORING), help="where completions are scored: this host, or Ray actors (default local)"
    )
    parser.add_argument(
        "--ray-address", default=None, metavar="HOST:PORT", help="the Ray head for --scoring ray"
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=defaults.max_sessions,
        help="concurrent sessions per env (default %(default)s)",
    )
    parser.add_argument(
        "--max-body-mb",
        type=float,
        default=defaults.max_body_bytes / 2**20,
        help="largest request (default %(default)s MiB)",
    )
    parser.add_argument(
        "--session-timeout-s",
        type=float,
        default=defaults.session_timeout_s,
        help="close a session idle this long (default %(default)s s)",
    )
    parser.add_argument(
        "--score-timeout-s",
        type=float,
        default=defaults.score_timeout_s,
        help="budget of one scoring batch; items past it are unscored, never zeroed (default %(default)s s)",
    )
    parser.add_argument(
        "--verdict-log",
        default=None,
        metavar="FILE",
        help="append every answered verdict to FILE (JSON lines), on disk before the answer is sent",
    )


def knobs_by_env(ids: Sequence[str], pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``KEY=VALUE`` for every env, ``ENV:KEY=VALUE`` for one (the env named as on the command line)."""
    knobs: dict[str, dict[str, Any]] = {name: {} for name in ids}
    for pair in pairs:
        head, sep, value = pair.partition("=")
        target, colon, key = head.partition(":")
        if not colon:
            target, key = "", head
        elif target not in knobs:
            raise InvalidArgumentError(
                f"--env-arg {pair!r} names env {target!r}, which is not served ({list(ids)})"
            )
        setting = parse_env_args([f"{key}={value}" if sep else pair])
        for name in [target] if colon else ids:
            knobs[name].update(setting)
    return knobs


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the envs until interrupted."""
    from rlvr_gym.backends.serve.app import ServeOptions
    from rlvr_gym.backends.serve.run import serve

    options = ServeOptions(
        max_sessions=args.max_sessions,
        max_body_bytes=int(args.max_body_mb * 2**20),
        session_timeout_s=args.session_timeout_s,
        score_timeout_s=args.score_timeout_s,
        scoring=args.scoring,
        ray_address=args.ray_address,
        verdict_log=args.verdict_log,
    )
    token = args.token if args.token is not None else os.environ.get(TOKEN_VARIABLE) or None
    serve(
        args.ids,
        knobs=knobs_by_env(args.ids, args.env_arg),
        host=args.host,
        port=args.port,
        token=token,
        options=options,
    )
    return 0


__all__ = ["TOKEN_VARIABLE", "add_serve_args", "cmd_serve", "knobs_by_env"]
