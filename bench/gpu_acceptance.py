"""One command that checks every GPU path: a few GRPO steps per backend, each in its own process.

Why: no GPU path runs in CI (it has no GPU). This runs, on a CUDA machine, the paths a user
would take — ``trl`` full fine-tune in bf16, ``trl`` with Liger's compiled chunked loss,
``deepspeed-zero2`` with CPU optimizer offload + LoRA r=16 (the GSM8K tutorial recipe), FSDP2 on
the visible GPUs with transformers generation, and ``eval`` — on the Qwen3-0.6B and Qwen2.5-1.5B
architectures (their published ``config.json`` in ``bench/configs``, random weights, a tokenizer
trained offline on GSM8K text), on the ``gsm8k`` env. Random weights earn no reward: this checks
that each path runs and what it costs, not that it learns.

    python bench/gpu_acceptance.py --out DIR            # all runs; DIR/acceptance.{json,md}
    python bench/gpu_acceptance.py --out DIR --dry-run  # the runs and their commands, no GPU needed

Each run records ok/error (with the tail of its log), its mean step time, the peak
``torch.cuda.max_memory_allocated`` of its training process, and where the optimizer state
lived. Without CUDA it says so and exits 2; with a failed run it exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIGS = {
    "qwen3-0.6b": HERE / "configs" / "qwen3-0.6b.json",
    "qwen2.5-1.5b": HERE / "configs" / "qwen2.5-1.5b.json",
}
ENV = "gsm8k"
STEPS = 3
TAIL_CHARS = 4000


@dataclass(frozen=True)
class Run:
    """One acceptance run: a backend (or ``eval``), its run-config changes and backend options."""

    name: str
    backend: str
    config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    what: str = ""


def runs() -> list[Run]:
    from rlvr_gym.backends.deepspeed_zero2 import MICRO_BATCH, RECIPE

    recipe = {k: v for k, v in RECIPE.items() if k != "lora"}
    return [
        Run("trl-bf16", "trl", what="TRL GRPOTrainer, full fine-tune, bf16"),
        Run("trl-liger", "trl", {"liger_loss": True}, what="TRL + Liger's torch.compile'd chunked GRPO loss"),
        Run(
            "deepspeed-zero2-offload-lora",
            "deepspeed-zero2",
            {
                **recipe,
                "lora": {"r": 16, "alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]},
            },
            {"micro_batch_size": MICRO_BATCH},
            what="ZeRO-2, DeepSpeedCPUAdam offload (pinned), LoRA r=16 (tutorial recipe)",
        ),
        Run(
            "fsdp2-transformers",
            "fsdp",
            options={"generation": "transformers"},
            what="FSDP2 over the visible GPUs, transformers generation",
        ),
        Run("eval", "eval", what="rlvr-gym eval on the GPU (transformers sampler), 8 tasks x 4 samples"),
    ]


def worker_command(run: Run, arch: str, out: Path) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        run.name,
        "--arch",
        arch,
        "--out",
        str(out),
    ]


def model_dir(out: Path, arch: str) -> Path:
    return out / "models" / arch


def build_model(arch: str, out: Path) -> Path:
    """The architecture from its ``config.json`` with random bf16 weights and an offline tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from rlvr_gym import envs
    from rlvr_gym.trainers.tiny_model import build_tokenizer, env_corpus

    directory = model_dir(out, arch)
    if (directory / "config.json").is_file():
        return directory
    tokenizer = build_tokenizer(env_corpus(envs.make(ENV)), vocab_size=2048)
    config = AutoConfig.from_pretrained(str(CONFIGS[arch]))
    config.pad_token_id, config.eos_token_id, config.bos_token_id = (
        tokenizer.pad_token_id,
        tokenizer.eos_token_id,
        None,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def run_config(run: Run, arch: str, out: Path):
    from rlvr_gym.backends.config import RunConfig

    base: dict[str, Any] = dict(
        model=str(model_dir(out, arch)),
        env_id=ENV,
        max_steps=STEPS,
        num_generations=4,
        prompts_per_step=2,
        max_prompt_length=512,
        max_completion_length=128,
        learning_rate=1e-6,
        save_steps=10_000,
        output_dir=str(out / "runs" / f"{arch}-{run.name}"),
    )
    return RunConfig(**{**base, **run.config})


def work(run: Run, arch: str, out: Path) -> dict[str, Any]:
    """Do one run in this process; what it measured (the parent adds ok/error)."""
    import torch

    from rlvr_gym import envs

    config = run_config(run, arch, out)
    started = time.perf_counter()
    record: dict[str, Any] = {}
    if run.backend == "eval":
        from rlvr_gym.trainers.evaluate import evaluate

        result = evaluate(
            ENV,
            config.model,
            n=4,
            k=1,
            limit=8,
            output_dir=config.output_dir,
            engine="transformers",
            max_new_tokens=config.max_completion_length,
            fresh=True,
            progress=False,
        )
        samples = 8 * 4
        record["step_time_s"] = (time.perf_counter() - started) / samples
        record["step_time_unit"] = "s per sample (wall, model load included)"
        record["summary"] = {k: v for k, v in result.summary.items() if isinstance(v, int | float | str)}
    else:
        from rlvr_gym.backends.metrics import read_metrics
        from rlvr_gym.backends.run_layout import OPTIMIZER_FILE
        from rlvr_gym.trainers.train import train

        result = train(envs.make(ENV), config, backend=run.backend, backend_options=dict(run.options))
        rows = read_metrics(result.output_dir)
        times = [r["step_time_s"] for r in rows if "step_time_s" in r]
        record["steps"] = result.steps
        record["step_time_s"] = statistics.median(times[1:] or times) if times else None
        record["step_time_unit"] = "s per optimizer step (median, first step left out)"
        gpu_rows = [r["peak_gpu_bytes"] for r in rows if "peak_gpu_bytes" in r]
        record["peak_gpu_bytes_logged"] = max(gpu_rows) if gpu_rows else None
        evidence = Path(result.output_dir) / OPTIMIZER_FILE
        zero = Path(result.output_dir) / "zero2-rank0.json"
        record["optimizer"] = json.loads((zero if zero.is_file() else evidence).read_text())
    record["wall_s"] = time.perf_counter() - started
    here = int(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else 0
    # FSDP trains in launcher-started ranks: their peak reaches us through the metrics rows.
    record["max_memory_allocated_bytes"] = max(here, record.get("peak_gpu_bytes_logged") or 0)
    return record


def run_all(out: Path, archs: list[str], selected: list[Run]) -> list[dict[str, Any]]:
    results = []
    for arch in archs:
        build_model(arch, out)
        for run in selected:
            log = out / "logs" / f"{arch}-{run.name}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            result_file = out / "results" / f"{arch}-{run.name}.json"
            result_file.unlink(missing_ok=True)
            print(f"[{arch}] {run.name} ...", flush=True)
            started = time.perf_counter()
            with log.open("w") as handle:
                code = subprocess.run(
                    worker_command(run, arch, out), stdout=handle, stderr=subprocess.STDOUT
                ).returncode
            row: dict[str, Any] = {"arch": arch, "run": run.name, "backend": run.backend, "what": run.what}
            if code == 0 and result_file.is_file():
                row.update(ok=True, **json.loads(result_file.read_text()))
            else:
                row.update(
                    ok=False, error=f"exit code {code}", tail=log.read_text(errors="replace")[-TAIL_CHARS:]
                )
            row["process_s"] = time.perf_counter() - started
            print(
                f"[{arch}] {run.name}: {'ok' if row['ok'] else 'FAILED'} in {row['process_s']:.0f} s",
                flush=True,
            )
            results.append(row)
    return results


def markdown(results: list[dict[str, Any]], device: str) -> str:
    lines = [
        f"# GPU acceptance on {device}",
        "",
        "| arch | run | ok | step time | max_memory_allocated | optimizer state | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        step = f"{r['step_time_s']:.3f} s" if r.get("step_time_s") is not None else "-"
        memory = (
            f"{r['max_memory_allocated_bytes'] / 2**30:.2f} GiB"
            if r.get("max_memory_allocated_bytes")
            else "-"
        )
        optimizer = r.get("optimizer") or {}
        where = ", ".join(optimizer.get("state_devices", [])) or "-"
        if optimizer:
            where += f" ({optimizer.get('state_bytes', 0) / 2**20:.0f} MiB, {optimizer.get('optimizer', '')})"
        error = (
            "" if r["ok"] else r["error"] + ": " + r["tail"].strip().splitlines()[-1][:160].replace("|", "/")
        )
        lines.append(
            f"| {r['arch']} | {r['run']} | {'ok' if r['ok'] else 'FAIL'} | {step} | {memory} | {where} | {error} |"
        )
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for models, runs, logs and the report"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list the runs and their commands; run nothing"
    )
    parser.add_argument("--arch", action="append", choices=sorted(CONFIGS), help="only these (repeatable)")
    parser.add_argument("--only", action="append", help="only the runs with these names (repeatable)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out = args.out.resolve()
    archs = args.arch or list(CONFIGS)
    known = runs()
    selected = [r for r in known if not args.only or r.name in args.only]
    if args.only and len(selected) != len(set(args.only)):
        print(f"unknown run in {args.only}; known: {[r.name for r in known]}", file=sys.stderr)
        return 2
    if args.worker:
        run = next(r for r in known if r.name == args.worker)
        record = work(run, args.arch[0], out)
        path = out / "results" / f"{args.arch[0]}-{run.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2, default=str) + "\n")
        return 0
    if args.dry_run:
        for arch in archs:
            for run in selected:
                print(f"{arch}  {run.name:<30} {run.what}")
                print("    " + " ".join(worker_command(run, arch, out)))
        return 0
    import torch

    if not torch.cuda.is_available():
        print(
            "no CUDA device visible to torch: the GPU acceptance runs need one (try --dry-run)",
            file=sys.stderr,
        )
        return 2
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(out / "torch_extensions"))
    device = torch.cuda.get_device_name(0)
    results = run_all(out, archs, selected)
    report = {"device": device, "torch": torch.__version__, "env": ENV, "steps": STEPS, "runs": results}
    (out / "acceptance.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out / "acceptance.md").write_text(markdown(results, device))
    print(markdown(results, device))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
