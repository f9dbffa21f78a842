"""The ``rlvr-gym`` command line.

An :class:`rlvr_gym.Error` (or an ``OSError``) is one readable line and exit code 2; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rlvr_gym import backends, envs
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.run_layout import METRICS_FILE, ROLLOUTS_FILE, SUMMARY_FILE
from rlvr_gym.error import (
    CliError,  # noqa: F401 - defined with the whole tree
    Error,
)
from rlvr_gym.trainers.eval_config import EvalConfig
from rlvr_gym.trainers.evaluate import evaluate
from rlvr_gym.trainers.flags import add_flags, flags_given, given, parse_env_args
from rlvr_gym.trainers.openai_engine import OpenAISampler
from rlvr_gym.trainers.parser import Parser
from rlvr_gym.trainers.serve_cmd import add_serve_args, cmd_serve

EXIT_ERROR = 2
OPENAI = "openai."
"""Namespace prefix of the ``--engine openai`` flags (made from :class:`OpenAISampler`'s parameters)."""
EXIT_CHECK_FAILED = 1


def import_env_modules(names: Sequence[str]) -> list[str]:
    """Import each module in ``names`` for the envs it registers (``--import MODULE``), so a
    local env module works without packaging it; returns the ids it added. The current folder is
    searched first, as ``python -m`` would."""

    if names and "" not in sys.path:
        sys.path.insert(0, "")
    before = set(envs.registry)
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise CliError(f"--import {name}: {exc}") from None
    return sorted(set(envs.registry) - before)


def add_import_arg(parser: argparse.ArgumentParser) -> None:
    """The repeatable ``--import MODULE`` (see :func:`import_env_modules`)."""
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first, for the envs it registers (repeatable)",
    )


def add_scoring_args(parser: argparse.ArgumentParser) -> None:
    """``--scoring`` / ``--ray-address`` for ``audit``: RunConfig's own fields (help,
    choices and defaults from the dataclass), as ``train`` has them."""
    add_flags(parser, RunConfig, only=("scoring", "ray_address"))
    parser.set_defaults(scoring=RunConfig.scoring, ray_address=RunConfig.ray_address)


def cmd_audit(args: argparse.Namespace) -> int:
    """Run the reward-hack catalogue on ENV; exit 1 when an exploit passes or earns > --threshold."""
    from rlvr_gym.backends.scoring import make_scorer, scored_by
    from rlvr_gym.envs.audit import audit

    env = envs.make(args.id, **parse_env_args(args.env_arg))
    scorer = make_scorer(env, args.scoring, ray_address=args.ray_address)
    try:
        report = audit(
            env,
            n_tasks=args.n_tasks,
            seed=args.seed,
            split=args.split,
            families=args.family or None,
            fast=args.fast,
            threshold=args.threshold,
            score=scored_by(scorer),
        )
    finally:
        scorer.close()
    if args.output:
        report.save(args.output)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.render())
    return 0 if report.ok else EXIT_CHECK_FAILED


def cmd_envs(args: argparse.Namespace) -> int:
    """List registered envs with their one-line descriptions (those whose id or description
    holds PATTERN, or matches it as a glob, when one is given). With ``--knobs``, each env's
    knobs follow it (type, default, help: from its config dataclass); a PATTERN that is an env id
    (``arith``, ``gsm8k-v0``) then shows that env alone."""
    chosen = sorted(envs.registry.items())
    if args.pattern and args.knobs and (named := _named(args.pattern)) is not None:
        chosen = [(named.id, named)]
    elif args.pattern:
        chosen = [(env_id, spec) for env_id, spec in chosen if _matches(args.pattern, env_id, spec)]
        if not chosen:
            raise CliError(f"no registered env matches {args.pattern!r}; `rlvr-gym envs` lists them all")
    if args.markdown:
        print(knobs_markdown(chosen))
        return 0
    width = max((len(env_id) for env_id, _ in chosen), default=0)
    for env_id, spec in chosen:
        print(f"{env_id:<{width}}  {spec.summary()}")
        if args.knobs:
            print_knobs(spec)
    return 0


def knobs_markdown(chosen: Sequence[tuple[str, envs.EnvSpec]]) -> str:
    """The knob tables of the chosen envs that have a config (docs/catalogue.md's block)."""
    from rlvr_gym.envs.config import config_of, knobs_markdown

    configs = {}
    for env_id, spec in chosen:
        try:
            config = config_of(spec.load())
        except Error:  # an env whose extra is not installed
            continue
        if config is not None:
            configs[env_id] = config
    return knobs_markdown(configs)


def _named(pattern: str) -> envs.EnvSpec | None:
    try:
        return envs.spec(pattern)
    except envs.RegistryError:
        return None


def print_knobs(spec: envs.EnvSpec) -> None:
    """One line per knob of ``spec``'s env: name, type, default (a registered default wins), help."""
    from rlvr_gym.envs.config import knobs_of

    try:
        knobs = knobs_of(spec.load())
    except Error as exc:
        print(f"  (cannot list its knobs: {exc})")
        return
    rows = [
        (k.name, k.type, repr(spec.kwargs[k.name]) if k.name in spec.kwargs else k.default, k.help)
        for k in knobs
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)] if rows else [0, 0, 0]
    for name, kind, default, help_text in rows:
        print(f"  {name:<{widths[0]}}  {kind:<{widths[1]}}  {default:<{widths[2]}}  {help_text}".rstrip())


def _matches(pattern: str, env_id: str, spec: envs.EnvSpec) -> bool:
    """Case-blind: a glob (``reasoning_gym/*``) against the id, else a substring of id or summary."""
    import fnmatch

    pattern = pattern.lower()
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(env_id.lower(), pattern)
    return pattern in env_id.lower() or pattern in spec.summary().lower()


def cmd_sandbox_info(args: argparse.Namespace) -> int:
    """Which code-sandbox layers a worker gets on this machine; exit 1 if any layer is missing."""
    from rlvr_gym.verifiers.code import SandboxPool

    if args.ray_address is not None:
        return sandbox_info_per_node(args.ray_address)
    with SandboxPool(1) as pool:
        isolation = pool.isolation
    print(f"running as uid {os.geteuid()}")
    print_layers(isolation)
    return 1 if isolation["missing"] else 0


def print_layers(walls: dict[str, Any], indent: str = "") -> None:
    """One line per sandbox layer (:data:`~rlvr_gym.verifiers.code.sandbox.LAYERS`, in its order),
    then the notes and what is missing: this host's report and each Ray node's alike."""
    from rlvr_gym.verifiers.code.sandbox import LAYERS

    for layer in LAYERS:
        print(f"{indent}{layer:<11} {walls.get(layer, walls.get('error'))}")
    for note in walls.get("notes", []):
        print(f"{indent}note        {note}")
    for missing in walls.get("missing", []):
        print(f"{indent}MISSING     {missing}")


def sandbox_info_per_node(address: str) -> int:
    """The layers of every CPU node of a Ray cluster (one scoring actor each reports its node's);
    a node missing a layer this host has is refused with the layer named (exit 2)."""
    from rlvr_gym.backends.scoring import make_scorer

    scorer = make_scorer(envs.make("arith"), "ray", ray_address=address)
    try:
        for node, walls in sorted(scorer.walls.items()):
            print(f"node {node[:12]}")
            print_layers(walls, indent="  ")
    finally:
        scorer.close()
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Run ``check_env`` on the named envs (or all); one line per env."""
    ids = sorted(envs.registry) if args.all else args.ids
    if not ids:
        raise CliError("name at least one env id, or pass --all")
    if args.n_tasks < 1:
        raise CliError(f"--n-tasks must be >= 1, got {args.n_tasks}")
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


def cmd_tiny_model(args: argparse.Namespace) -> int:
    """Build the tiny offline model (tokenizer trained on ``--env``'s text) into OUT."""
    from rlvr_gym.trainers.tiny_model import build_tiny_model, make_servable

    env = envs.make(args.env, **parse_env_args(args.env_arg))
    path = build_tiny_model(
        args.out, env, hidden_size=args.hidden_size, num_layers=args.num_layers, seed=args.seed
    )
    make_servable(path)  # `transformers serve OUT` then returns what the model wrote
    print(f"tiny model written to {path}")
    return 0


def option_dest(name: str) -> str:
    """Where a backend's option flags land in the namespace (apart from RunConfig's)."""
    return f"backend:{name}:"


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """The typed options of the chosen backend from its flags; another backend's flag is an error."""
    chosen = args.backend
    options: dict[str, Any] = {}
    for name in option_backends():
        typed = flags_given(args, backends.get(name).Options, dest=option_dest(name))
        if typed and backends.BACKENDS.get(chosen) != backends.BACKENDS[name]:  # "fsdp" is fsdp-vllm
            raise CliError(f"{', '.join(typed)} apply to --backend {name}, not {chosen!r}")
        if typed:
            options = given(args, backends.get(name).Options, dest=option_dest(name))
    return options


def option_backends() -> list[str]:
    """Backend names with options of their own (an alias such as ``fsdp`` shares its module's)."""
    seen: dict[str, str] = {}
    for name, module in backends.BACKENDS.items():
        seen.setdefault(module, name)
    return list(seen.values())


def run_config(args: argparse.Namespace) -> RunConfig:
    """The RunConfig ``rlvr-gym train`` runs: the flags typed, RunConfig's defaults for the rest —
    exactly ``RunConfig(**those flags)``. Without ``--model`` it is the tiny-model demo instead
    (:func:`rlvr_gym.trainers.demo.demo_config`), the flags typed still winning."""
    from rlvr_gym.trainers.demo import demo_config

    fields = given(args, RunConfig)
    if "model" in fields:
        return RunConfig(**fields)
    return demo_config(fields.pop("env_id"), **fields)


def cmd_train(args: argparse.Namespace) -> int:
    """Run GRPO on an env; metrics, checkpoints, the model and a reward plot go to --output-dir."""
    from rlvr_gym.trainers.train import train

    options = backend_options(args)
    config = run_config(args)
    if not config.audit:
        print("note: --no-audit: the reward-hack audit is skipped")
    result = train(
        config=config,
        backend=args.backend,
        resume=args.resume,
        overwrite=args.overwrite,
        backend_options=options,
    )
    rows = [r for r in result.metrics if "reward/mean" in r]
    if rows:
        fifth = max(1, len(rows) // 5)
        for key, label in (("accuracy", "accuracy   "), ("reward/mean", "reward mean")):
            first = sum(r.get(key, 0.0) for r in rows[:fifth]) / fifth
            last = sum(r.get(key, 0.0) for r in rows[-fifth:]) / fifth
            print(f"{label}: first fifth {first:.3f} -> last fifth {last:.3f} over {result.steps} steps")
    print(f"metrics: {result.output_dir / METRICS_FILE}")
    print(f"model:   {result.model_dir}")
    if result.plot:
        print(f"plot:    {result.plot}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """Sample --n completions per task, score them, print accuracy/pass@k/rewards/reasons."""
    from rlvr_gym.trainers.run_dir import default_eval_dir, eval_env, model_of_run

    if args.model is None:
        raise CliError("--model is required (a Hugging Face model path or hub id; see rlvr-gym tiny-model)")
    config = EvalConfig(**given(args, EvalConfig))  # the flags typed; EvalConfig's defaults the rest
    openai_options = given(args, OpenAISampler.__init__, dest=OPENAI)
    sampler = None
    if config.engine == "openai":
        if args.base_url is None:
            raise CliError(
                "--engine openai needs --base-url (the server's /v1 root, e.g. http://127.0.0.1:8000/v1)"
            )
        model = args.model  # the name the server knows the model by
        sampler = OpenAISampler(
            args.base_url,
            model,
            max_new_tokens=config.max_new_tokens,
            temperature=config.temperature,
            **openai_options,
        )
    elif args.base_url is not None or openai_options:
        typed = (["--base-url"] if args.base_url is not None else []) + flags_given(
            args, OpenAISampler.__init__, dest=OPENAI
        )
        raise CliError(f"{', '.join(typed)}: for --engine openai only")
    else:
        model = model_of_run(args.model)  # a run folder means its final/
    chosen = eval_env(model, args.env, parse_env_args(args.env_arg))
    if chosen.note:
        print(chosen.note)
    env = envs.make(chosen.env_id, **chosen.env_kwargs)
    if config.output_dir is None:  # named by the env id as typed (runs/eval-arith-MODEL)
        config = dataclasses.replace(config, output_dir=default_eval_dir(model, chosen.env_id))
    result = evaluate(env, model, config, sampler=sampler)
    s = result.summary
    session = s["this_session"]
    print(f"{s['env']} {s['split']}: {s['tasks']} tasks x {s['n']} samples ({s['engine'] or 'all resumed'})")
    print(f"env settings: {json.dumps(s['env_kwargs'], sort_keys=True)}")
    print(f"accuracy {s['accuracy']:.4f}  " + "  ".join(f"{k} {v:.4f}" for k, v in s["pass@k"].items()))
    rewards = {k: v for k, v in s.items() if k.startswith("reward/")}
    print("  ".join(f"{k} {v:.4f}" for k, v in rewards.items()))
    print("reasons: " + ", ".join(f"{k}={v}" for k, v in s["reasons"].items()))
    if s.get("benchmark"):  # the benchmark's own figures (IFEval's four accuracies)
        print("benchmark: " + "  ".join(f"{k} {v:.4f}" for k, v in s["benchmark"].items()))
    tools = {k: v for k, v in s.items() if k.startswith(("tools/", "episode/"))}
    if tools:  # a tool env's episodes
        print("  ".join(f"{k} {v:.3f}" for k, v in tools.items()))
    print(
        f"scored {session['rollouts_scored']} rollouts this run, resumed {session['rollouts_resumed']}"
        + (f", {session['rollouts_per_s']} rollouts/s" if session["rollouts_per_s"] else "")
    )
    print(f"rollouts: {result.output_dir / ROLLOUTS_FILE}")
    print(f"summary:  {result.output_dir / SUMMARY_FILE}")
    for line in s["warnings"]:  # said during the eval too; repeated last, where it is read
        print(f"WARNING: {line}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """PNG plots of RUN_DIR's metrics and an HTML page with them and sample rollouts."""
    from rlvr_gym.trainers.report import build_report

    report = build_report(args.run_dir, samples=args.samples)
    for name, path in report.plots.items():
        print(f"plot {name}: {path}")
    for name in report.missing:
        print(f"plot {name}: not logged in this run")
    print(f"page: {report.page}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Print the memory plan per backend for --model on this (or the described) hardware, and the pick."""
    from rlvr_gym.backends.planning.choice import NoBackendFitsError, choose, render, workload_for
    from rlvr_gym.backends.planning.hardware import GIB, Hardware, detect
    from rlvr_gym.backends.planning.memory_plan import load_shape

    config = RunConfig(**{"env_id": "arith", **given(args, RunConfig)})
    env = envs.make(config.env_id, **config.env_kwargs)
    here = detect()
    hardware = Hardware(
        gpus=here.gpus if args.gpus is None else args.gpus,
        gpu_memory_bytes=int(args.gpu_memory_gib * GIB) if args.gpu_memory_gib else here.gpu_memory_bytes,
        cpu_memory_bytes=int(args.cpu_memory_gib * GIB) if args.cpu_memory_gib else here.cpu_memory_bytes,
        bf16=here.bf16 or args.bf16,
        vllm=here.vllm or args.vllm,
    )
    print(f"env: {env}")
    try:
        choice = choose(load_shape(config.model), hardware, workload_for(config))
    except NoBackendFitsError as exc:
        raise CliError(str(exc)) from exc
    print(render(choice))
    return 0


def add_env_arg(parser: argparse.ArgumentParser) -> None:
    """The repeatable ``--env-arg KEY=VALUE`` every env-making command takes (see :func:`parse_env_args`)."""
    parser.add_argument(
        "--env-arg", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument"
    )


PLAN_FIELDS = (
    "model",
    "env_id",
    "env_kwargs",
    "num_generations",
    "prompts_per_step",
    "max_prompt_length",
    "max_completion_length",
    "lora",
    "beta",
)
"""The RunConfig fields a memory plan depends on (``rlvr-gym plan`` takes these flags)."""


def build_parser() -> argparse.ArgumentParser:
    """The whole ``rlvr-gym`` parser; importing and calling it has no side effects (the docs
    render it with sphinx-argparse: ``:module: rlvr_gym.trainers.cli`` ``:func: build_parser``)."""
    from rlvr_gym.verifiers.exploits import MAX_REWARD  # the audit's documented threshold

    parser = Parser(prog="rlvr-gym", description="Verifiable-reward environments for GRPO.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("envs", help="list registered envs")
    p.add_argument(
        "pattern",
        nargs="?",
        default=None,
        metavar="PATTERN",
        help="only envs whose id or description holds PATTERN (or, with * ? [, whose id matches the glob)",
    )
    p.add_argument(
        "--knobs",
        action="store_true",
        help="list each env's knobs: type, default and help (PATTERN an env id: that env alone)",
    )
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the knob tables of the envs that have a config, as docs/catalogue.md holds them",
    )
    add_import_arg(p)
    p.set_defaults(run=cmd_envs)

    p = sub.add_parser(
        "sandbox-info", help="which code-sandbox layers are active here (exit 1 if any is missing)"
    )
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="HOST:PORT",
        help="report every CPU node of this Ray cluster instead (refusing one weaker than this host)",
    )
    p.set_defaults(run=cmd_sandbox_info)

    p = sub.add_parser("check", help="check envs against the env contract (check_env's rules)")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true", help="check every registered env")
    p.add_argument("--n-tasks", type=int, default=8, help="tasks per split to check (default 8)")
    add_env_arg(p)
    add_import_arg(p)
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("verify", help="score one completion and print the Verdict")
    p.add_argument("id", metavar="ID")
    p.add_argument("--index", type=int, required=True, help="task index within the split")
    p.add_argument("--split", default=None, help="split name (default: the env's first split)")
    p.add_argument("--completion", required=True, help="completion text, or - to read stdin")
    p.add_argument("--json", action="store_true", help="print the Verdict as JSON")
    add_env_arg(p)
    p.set_defaults(run=cmd_verify)

    p = sub.add_parser("tiny-model", help="build a tiny offline causal LM + tokenizer for tests and demos")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--env", default="arith", help="env whose text trains the tokenizer (default arith)")
    add_env_arg(p)
    p.add_argument("--hidden-size", type=int, default=64)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_tiny_model)

    p = sub.add_parser("plan", help="memory plan per backend and the backend it leads to")
    add_flags(p, RunConfig, only=PLAN_FIELDS, required=("model",))
    p.add_argument("--gpus", type=int, default=None, help="plan for this many GPUs (default: this machine)")
    p.add_argument("--gpu-memory-gib", type=float, default=None, help="memory per GPU (default: detected)")
    p.add_argument("--cpu-memory-gib", type=float, default=None, help="host RAM (default: detected)")
    p.add_argument("--bf16", action="store_true", help="the GPUs support bf16 (default: detected)")
    p.add_argument("--vllm", action="store_true", help="vllm is installed (default: detected)")
    p.set_defaults(run=cmd_plan)

    p = sub.add_parser(
        "train",
        help="train a model on an env with GRPO",
        description="Train a model on an env with GRPO. The run flags are RunConfig's fields, with its "
        "defaults; without --model the tiny-model demo's settings (rlvr_gym.trainers.demo) apply "
        "instead, the flags given still winning.",
    )
    add_flags(p, RunConfig, required=("env_id",))
    p.add_argument("--backend", default="auto", help="training backend (default: chosen from the hardware)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from the last checkpoint (or a finished warm start) in --output-dir",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="remove what the run already in --output-dir wrote (evals, the report and your files stay) first",
    )
    for name in option_backends():
        group = p.add_argument_group(f"--backend {name} options")
        add_flags(group, backends.get(name).Options, dest=option_dest(name))
    add_import_arg(p)
    p.set_defaults(run=cmd_train)

    p = sub.add_parser("audit", help="run generic reward hacks against an env's verifiers")
    p.add_argument("id", metavar="ENV")
    add_import_arg(p)
    add_env_arg(p)
    p.add_argument("--n-tasks", type=int, default=8, help="tasks sampled (default 8)")
    p.add_argument("--seed", type=int, default=0, help="sample seed (default 0)")
    p.add_argument("--split", default=None, help="default: test when the env has it")
    p.add_argument("--family", action="append", default=[], help="audit only this family; repeatable")
    p.add_argument("--fast", action="store_true", help="leave out the slow exploits (as train does)")
    p.add_argument(
        "--threshold",
        type=float,
        default=MAX_REWARD,
        help=f"a failing exploit rewarded above this fails the audit too (default {MAX_REWARD})",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--output", default=None, metavar="FILE", help="also write the JSON report to FILE")
    add_scoring_args(p)
    p.set_defaults(run=cmd_audit)

    p = sub.add_parser("eval", help="sample completions on an env's tasks, score them, report pass@k")
    p.add_argument(
        "--env",
        default=None,
        metavar="ID",
        help="env to score on (default for a model of a run folder: the run's env, version and settings)",
    )
    add_env_arg(p)
    p.add_argument(
        "--model",
        default=None,
        help="HF model path or hub id, or a run folder (its final/) or a model inside one",
    )
    add_flags(p, EvalConfig)  # --n, --k, --split, ..., --engine, --scoring, --ray-address
    group = p.add_argument_group("--engine openai options")
    group.add_argument("--base-url", default=None, help="the server's /v1 root URL")
    add_flags(group, OpenAISampler.__init__, dest=OPENAI)
    add_import_arg(p)
    p.set_defaults(run=cmd_eval)

    p = sub.add_parser("serve", help="serve envs over OpenEnv's protocol (pip install 'rlvr-gym[openenv]')")
    add_serve_args(p)
    add_import_arg(p)
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser("report", help="PNG plots and an HTML page of a training run")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--samples", type=int, default=8, help="sample rollouts per rollout log (default 8)")
    p.set_defaults(run=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        import_env_modules(getattr(args, "imports", []))
        code = args.run(args)
        sys.stdout.flush()  # inside the try: a reader that went away is met here, not at exit
        return code
    except Error as exc:  # everything rlvr-gym refuses on purpose; a real bug keeps its traceback
        print(f"rlvr-gym: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `rlvr-gym envs | head`: the reader has all it wanted
        # Python flushes stdout again at exit and would report the same error: point it at devnull
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # the machine refused (no such file, no permission, disk full)
        print(f"rlvr-gym: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("rlvr-gym: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
