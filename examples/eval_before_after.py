"""Example 4: evaluate a model, train it with GRPO, evaluate it again, and write a report.

By default it runs offline on the tiny model and ``arith``: evaluate the fresh model, run the
stated supervised warm start and GRPO (``trainers.TINY_DEMO``, shortened by the flags), evaluate
the trained model on the same test tasks with the same seed, and build the run's HTML report
(which shows both evals' summaries and sample rollouts). Pass ``--model`` to start from any
Hugging Face model instead.

    python -m examples.eval_before_after --output-dir runs/before-after
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from rlvr_gym import envs
from rlvr_gym.trainers import TINY_DEMO, RunConfig, evaluate, train
from rlvr_gym.trainers.cli import parse_env_args
from rlvr_gym.trainers.report import build_report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="arith")
    parser.add_argument(
        "--env-arg", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument"
    )
    parser.add_argument("--model", default=None, help="HF model (default: the tiny offline model)")
    parser.add_argument("--tasks", type=int, default=32, help="test tasks to evaluate")
    parser.add_argument("--n", type=int, default=4, help="samples per task")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=TINY_DEMO["max_steps"], help="GRPO steps")
    parser.add_argument("--warm-start-steps", type=int, default=TINY_DEMO["warm_start_steps"])
    parser.add_argument("--output-dir", default="runs/before-after")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    env = envs.make(args.env, **parse_env_args(args.env_arg))
    started = time.perf_counter()

    def phase(name: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {name}", flush=True)

    run_dir = Path(args.output_dir)
    model = args.model
    if model is None:
        from rlvr_gym.trainers.tiny_model import build_tiny_model

        model = str(build_tiny_model(run_dir / "tiny-model", env))
    common = dict(
        n=args.n,
        k=sorted({1, args.n}),
        split="test",
        limit=args.tasks,
        max_new_tokens=args.max_new_tokens,
        progress=not args.no_progress,
    )
    phase("evaluating before training")
    before = evaluate(env, model, output_dir=run_dir / "eval-before", **common)

    settings = {**TINY_DEMO, "max_steps": args.steps, "warm_start_steps": args.warm_start_steps}
    if args.model is not None:
        settings.update(learning_rate=1e-6, warm_start_steps=0)
    config = RunConfig(
        model=model, env_id=args.env, output_dir=str(run_dir), save_steps=args.steps, **settings
    )
    phase(f"training: {config.warm_start_steps} warm-start steps, then {config.max_steps} GRPO steps")
    result = train(env, config, backend="trl")
    phase("evaluating after training")

    after = evaluate(env, str(result.model_dir), output_dir=run_dir / "eval-after", **common)
    report = build_report(run_dir)
    phase("done")

    keys = ["accuracy", *before.summary["pass@k"], "reward/mean"]
    print(f"{'metric':<12} {'before':>8} {'after':>8}")
    for key in keys:
        b = before.summary["pass@k"].get(key, before.summary.get(key))
        a = after.summary["pass@k"].get(key, after.summary.get(key))
        print(f"{key:<12} {b:>8.3f} {a:>8.3f}")
    print(f"reasons before: {before.summary['reasons']}")
    print(f"reasons after:  {after.summary['reasons']}")
    print(f"report: {report.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
