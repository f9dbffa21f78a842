"""Example 3: train GSM8K with GRPO on the backend named by ``--backend``.

The defaults are the recipe of the GRPO tutorial: a Qwen 1.5B-class instruct model, a LoRA
adapter of rank 16 on the attention projections (q/k/v/o), groups of 4 completions, gradient
accumulation 8, learning rate 5e-5, and DeepSpeed ZeRO-2 with the optimizer offloaded to CPU
(the ``deepspeed-zero2`` backend, where it is registered and can run). ``--tiny`` swaps the
model for the tiny offline one and shrinks the run so it finishes on a CPU in seconds.

    python -m examples.train_gsm8k --print-config                # the recipe, nothing runs
    python -m examples.train_gsm8k --backend deepspeed-zero2     # the recipe (needs the model)
    python -m examples.train_gsm8k --tiny --backend trl          # offline, CPU, seconds

A backend that cannot run here is refused with its reason (exit code 2), before any work.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from rlvr_gym import backends
from rlvr_gym.trainers import LoraSettings, RunConfig, train

RECIPE_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
RECIPE_BACKEND = "deepspeed-zero2"  # ZeRO-2, optimizer states offloaded to CPU
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
RECIPE = {
    "num_generations": 4,
    "prompts_per_step": 2,
    "gradient_accumulation_steps": 8,
    "learning_rate": 5e-5,
    "max_completion_length": 256,
    "max_steps": 500,
}
TINY = {  # the same shape, shrunk: tiny offline model, two short steps, no accumulation
    "num_generations": 4,
    "prompts_per_step": 1,
    "gradient_accumulation_steps": 1,
    "learning_rate": 5e-5,
    "max_completion_length": 16,
    "max_steps": 2,
}


def default_backend() -> str:
    """The recipe's ZeRO-2 backend where this checkout registers it, else the hardware's choice."""
    return RECIPE_BACKEND if RECIPE_BACKEND in backends.BACKENDS else "auto"


def build_config(args: argparse.Namespace) -> RunConfig:
    settings = dict(TINY if args.tiny else RECIPE)
    if args.max_steps is not None:
        settings["max_steps"] = args.max_steps
    return RunConfig(
        model=None if args.tiny else args.model,
        env_id="gsm8k",
        lora=LoraSettings(r=16, alpha=32, target_modules=ATTENTION),
        output_dir=args.output_dir or f"runs/gsm8k-{args.backend}",
        save_steps=max(settings["max_steps"], 1),
        seed=args.seed,
        **settings,
    )


def check_backend(name: str) -> str | None:
    """``None`` when ``name`` can run here, else the one-line reason it cannot."""
    if name == "auto":
        name = backends.auto()
    if name not in backends.BACKENDS:
        return f"unknown backend {name!r}; this checkout has {sorted(backends.BACKENDS)}"
    try:
        ok, why = backends.get(name).available()
    except ImportError as exc:
        ok, why = False, f"cannot import it: {exc}"
    return None if ok else f"backend {name!r} cannot run here: {why}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backend",
        default=default_backend(),
        help=f"one of {sorted(backends.BACKENDS)} or auto (default: {default_backend()})",
    )
    parser.add_argument("--model", default=RECIPE_MODEL, help=f"HF model (default {RECIPE_MODEL})")
    parser.add_argument("--tiny", action="store_true", help="tiny offline model, two short steps")
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--output-dir", default=None, help="default runs/gsm8k-BACKEND")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--print-config", action="store_true", help="print the run's config and exit")
    args = parser.parse_args(argv)
    config = build_config(args)
    if args.print_config:
        print(json.dumps({"backend": args.backend, **config.to_dict()}, indent=2, default=list))
        return 0
    refusal = check_backend(args.backend)
    if refusal:
        print(f"train_gsm8k: error: {refusal}", file=sys.stderr)
        return 2
    print(f"training gsm8k on backend {args.backend} -> {config.output_dir}")
    result = train("gsm8k", config, backend=args.backend)
    rewards = [row["reward/mean"] for row in result.metrics if "reward/mean" in row]
    print(f"{result.steps} steps; reward/mean per step: {', '.join(f'{r:.3f}' for r in rewards)}")
    print(f"adapter: {result.model_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
