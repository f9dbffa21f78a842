"""The ``rlvr-gym`` command line. Every error is one readable line and a non-zero exit code."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import envs

EXIT_ERROR = 2
EXIT_CHECK_FAILED = 1


class CliError(Exception):
    """A user error: printed as one line, exit code 2."""


def parse_env_args(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs into kwargs; values are JSON when they parse as JSON, else strings."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.isidentifier():
            raise CliError(f"--env-arg expects key=value with a Python identifier as key, got {pair!r}")
        try:
            kwargs[key] = json.loads(raw)
        except json.JSONDecodeError:
            kwargs[key] = raw
    return kwargs


def cmd_envs(args: argparse.Namespace) -> int:
    """List registered envs with their one-line descriptions."""
    width = max((len(env_id) for env_id in envs.registry), default=0)
    for env_id, spec in sorted(envs.registry.items()):
        print(f"{env_id:<{width}}  {spec.summary()}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Run ``check_env`` on the named envs (or all); one line per env."""
    ids = sorted(envs.registry) if args.all else args.ids
    if not ids:
        raise CliError("name at least one env id, or pass --all")
    failed = 0
    for env_id in ids:
        env = envs.make(env_id, **parse_env_args(args.env_arg))
        try:
            passed = envs.check_env(env, n_tasks=args.n_tasks)
        except envs.EnvCheckError as exc:
            failed += 1
            print(f"FAIL {env_id}: {exc}")
        else:
            print(f"ok   {env_id}: {', '.join(passed)}")
    return EXIT_CHECK_FAILED if failed else 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Score one completion against task ``--index`` of ``--split`` and print the Verdict."""
    env = envs.make(args.id, **parse_env_args(args.env_arg))
    completion = sys.stdin.read() if args.completion == "-" else args.completion
    _, info = env.reset(options={"split": args.split or env.splits[0], "index": args.index})
    verdict = env.verify(completion, info["task"])
    if args.json:
        print(json.dumps(verdict.to_dict()))
    else:
        summary = f"score={verdict.score:g} passed={verdict.passed} reason={verdict.reason.value}"
        print(f"{summary} answer={verdict.answer!r}")
        for key, value in verdict.details.items():
            print(f"  {key}: {value}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlvr-gym", description="Verifiable-reward environments for GRPO.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("envs", help="list registered envs")
    p.set_defaults(run=cmd_envs)

    p = sub.add_parser("check", help="check envs against the SingleTurnEnv contract")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true", help="check every registered env")
    p.add_argument("--n-tasks", type=int, default=8, help="tasks per split to check (default 8)")
    p.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("verify", help="score one completion and print the Verdict")
    p.add_argument("id", metavar="ID")
    p.add_argument("--index", type=int, required=True, help="task index within the split")
    p.add_argument("--split", default=None, help="split name (default: the env's first split)")
    p.add_argument("--completion", required=True, help="completion text, or - to read stdin")
    p.add_argument("--json", action="store_true", help="print the Verdict as JSON")
    p.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    p.set_defaults(run=cmd_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (CliError, envs.RegistryError, ValueError, TypeError, LookupError) as exc:
        print(f"rlvr-gym: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("rlvr-gym: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
