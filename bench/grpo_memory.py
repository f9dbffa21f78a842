"""GRPO memory and speed: vanilla TRL vs TRL + Liger loss vs our ``trl`` backend's memory path.

Every configuration trains the same model (built from a config, random weights, real Qwen
vocabulary of 151,936, nothing downloaded) for a few GRPO steps on the same prompts, with
fixed prompt and completion lengths (``min_new_tokens`` forces the full completion) and group
size 8, each in its own child process, so one configuration's allocations cannot leak into
another's figure. Measured per configuration: peak memory (CPU: peak RSS of the child; GPU:
``torch.cuda.max_memory_allocated``), median step time after the first step, and training
tokens per second (completions × (prompt + completion) / step time). Ratios against vanilla
TRL and against TRL + Liger are printed from the same run.

Configurations: ``vanilla`` (TRL ``GRPOTrainer`` as shipped), ``liger`` (TRL + Liger's chunked
GRPO loss, ``backends/engine/liger.py``), ``ours`` (the ``trl`` backend's defaults) and ``ours`` with
one memory piece switched off at a time (to measure what each saves).

    python bench/grpo_memory.py --cpu-proxy --out bench/results/grpo_memory_cpu.json
    python bench/grpo_memory.py --model qwen3-0.6b --completion-len 1024 --search-batch  # GPU

``--cpu-proxy`` uses a 2-layer, 64-wide model with the full vocabulary, where the logits term
dominates. The KL term is on (``beta=0.04``), so the reference pass is measured too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# Run as a script, this folder heads sys.path, and bench/verifiers.py would shadow our
# ``verifiers`` package: put the repository root first instead.
ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

VOCAB = 151_936
GROUP = 8
BETA = 0.04

ARCHS: dict[str, dict[str, Any]] = {
    "qwen3-0.6b": dict(
        family="qwen3",
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
    ),
    "qwen2.5-1.5b": dict(
        family="qwen2",
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
    ),
    "cpu-proxy": dict(
        family="qwen3",
        hidden_size=64,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
    ),
}

# Each configuration: RunConfig changes and whether it is TRL's own trainer untouched.
OFF = dict(chunked_logps=False, gradient_checkpointing=False, offload_activations=False)
CONFIGS: dict[str, dict[str, Any]] = {
    "vanilla": dict(OFF),
    "liger": dict(OFF, liger_loss=True),
    "ours": {},
    "ours-no-chunked-logps": dict(chunked_logps=False),
    "ours-no-grad-ckpt": dict(gradient_checkpointing=False),
    "ours-no-offload": dict(offload_activations=False),
}
CPU_SKIPS = {"ours-no-offload"}  # activation offload to CPU memory changes nothing on a CPU


# ----------------------------------------------------------------------------- model and env
def build_model(out: Path, arch: str, *, cuda: bool) -> Path:
    """Random-weight model of ``arch`` with a word-level tokenizer over the full vocabulary."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen3Config

    spec = dict(ARCHS[arch])
    family = spec.pop("family")
    config_class = Qwen3Config if family == "qwen3" else Qwen2Config
    config = config_class(
        vocab_size=VOCAB,
        tie_word_embeddings=True,
        max_position_embeddings=4096,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        **spec,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16 if cuda else torch.float32)
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = 1
    vocab = {"<pad>": 0, "<eos>": 1, **{f"w{i}": i for i in range(2, VOCAB)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def bench_env(prompt_len: int):
    """Text prompts of exactly ``prompt_len`` tokens; a deterministic, varied score per completion."""
    from rlvr_gym.envs import SingleTurnEnv
    from rlvr_gym.verifiers import Verdict

    def score(completion: object, task: dict) -> Verdict:
        return Verdict.fail("wrong_answer", score=(zlib.crc32(str(completion).encode()) % 1000) / 999)

    class MemoryBenchEnv(SingleTurnEnv):
        splits = ("train",)

        def __init__(self) -> None:
            super().__init__(prompt_format="text")
            self.rubric = score

        def load_tasks(self, split: str) -> list[dict]:
            return [{"seed": s} for s in range(64)]

        def question(self, task: dict) -> str:
            first = 2 + task["seed"] * 997
            return " ".join(f"w{2 + (first + 7919 * k) % (VOCAB - 2)}" for k in range(prompt_len))

    return MemoryBenchEnv()


# ----------------------------------------------------------------------------- one child run
def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Train ``spec['steps']`` GRPO steps with one configuration; return its figures."""
    import torch
    from trl import GRPOTrainer

    from rlvr_gym.backends import trl as trl_backend
    from rlvr_gym.backends.config import RunConfig

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    config = RunConfig(
        model=spec["model"],
        num_generations=GROUP,
        prompts_per_step=spec["prompts_per_step"],
        max_prompt_length=spec["prompt_len"],
        max_completion_length=spec["completion_len"],
        beta=BETA,
        max_steps=spec["steps"],
        save_steps=10**6,
        learning_rate=1e-5,
        output_dir=spec["output_dir"],
        **CONFIGS[spec["config"]],
    )
    result = trl_backend.train(
        bench_env(spec["prompt_len"]),
        config,
        model=spec["model"],
        trainer_class=GRPOTrainer,
        generation_kwargs={"min_new_tokens": spec["completion_len"]},
        save_strategy="no",
        disable_tqdm=True,
    )
    times = [row["step_time_s"] for row in result.metrics if "step_time_s" in row]
    if len(times) != spec["steps"]:
        raise RuntimeError(f"expected {spec['steps']} timed steps, got {len(times)}")
    step_s = statistics.median(times[1:] if len(times) > 1 else times)
    lengths = [row["completion_length"] for row in result.metrics]
    batch = config.completions_per_step
    if cuda:
        peak, device = int(torch.cuda.max_memory_allocated()), torch.cuda.get_device_name()
    else:
        peak, device = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "cpu"
    return {
        "config": spec["config"],
        "peak_bytes": peak,
        "step_s": step_s,
        "tokens_per_s": batch * (spec["prompt_len"] + spec["completion_len"]) / step_s,
        "device": device,
        "batch": batch,
        "prompt_len": spec["prompt_len"],
        "completion_len": spec["completion_len"],
        "mean_completion_len": statistics.fmean(lengths),
        "rss_before_model_bytes": base_rss,
        "loss": [row.get("loss") for row in result.metrics],
    }


def run_child(spec: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
    """Run one configuration in a fresh process; ``None`` if it ran out of memory (GPU)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "WANDB_DISABLED": "true"}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
    if proc.returncode != 0:
        if "OutOfMemoryError" in proc.stderr or "CUDA out of memory" in proc.stderr:
            return None
        raise RuntimeError(f"{spec['config']} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def largest_batch(spec: dict[str, Any], timeout_s: float, limit: int = 64) -> int:
    """GPU: the most prompts per step (× group size completions) that fit, by doubling then bisecting."""
    low, high = 0, 1
    while high <= limit and run_child({**spec, "prompts_per_step": high, "steps": 1}, timeout_s):
        low, high = high, high * 2
    high = min(high, limit + 1)
    while high - low > 1:
        mid = (low + high) // 2
        if run_child({**spec, "prompts_per_step": mid, "steps": 1}, timeout_s):
            low = mid
        else:
            high = mid
    return low * GROUP


# ----------------------------------------------------------------------------- report
def ratios(records: list[dict[str, Any]]) -> None:
    """Add ``*_vs_vanilla`` and ``*_vs_liger`` ratios to every record (same run, same batch)."""
    by_name = {r["config"]: r for r in records}
    for anchor in ("vanilla", "liger"):
        ref = by_name.get(anchor)
        if ref is None:
            continue
        for r in records:
            r[f"peak_vs_{anchor}"] = r["peak_bytes"] / ref["peak_bytes"]
            r[f"tokens_per_s_vs_{anchor}"] = r["tokens_per_s"] / ref["tokens_per_s"]


def table(records: list[dict[str, Any]]) -> str:
    lines = [
        f"{'config':24} {'peak MB':>9} {'step s':>8} {'tok/s':>8} {'peak/van':>9} {'peak/liger':>10} "
        f"{'tok/s/van':>9}"
    ]
    for r in records:
        lines.append(
            f"{r['config']:24} {r['peak_bytes'] / 2**20:9.0f} {r['step_s']:8.2f} {r['tokens_per_s']:8.0f} "
            f"{r.get('peak_vs_vanilla', float('nan')):9.2f} {r.get('peak_vs_liger', float('nan')):10.2f} "
            f"{r.get('tokens_per_s_vs_vanilla', float('nan')):9.2f}"
        )
    return "\n".join(lines)


def plot(records: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["config"] for r in records]
    fig, (mem, speed) = plt.subplots(1, 2, figsize=(11, 4))
    mem.barh(names, [r["peak_bytes"] / 2**30 for r in records], color="tab:blue")
    mem.set_xlabel("peak memory (GiB)")
    mem.invert_yaxis()
    speed.barh(names, [r["tokens_per_s"] for r in records], color="tab:green")
    speed.set_xlabel("training tokens / s")
    speed.invert_yaxis()
    speed.set_yticklabels([])
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--cpu-proxy", action="store_true", help="tiny-hidden model, full vocabulary, on CPU")
    parser.add_argument("--model", choices=sorted(a for a in ARCHS if a != "cpu-proxy"), default="qwen3-0.6b")
    parser.add_argument("--prompt-len", type=int, default=128, help="prompt tokens (128 / 256 / 1024)")
    parser.add_argument(
        "--completion-len", type=int, default=256, help="completion tokens (128 / 256 / 1024)"
    )
    parser.add_argument("--prompts-per-step", type=int, default=1, help=f"× {GROUP} completions per step")
    parser.add_argument(
        "--steps", type=int, default=3, help="GRPO steps per configuration (first is warm-up)"
    )
    parser.add_argument("--configs", default=None, help=f"comma-separated subset of {list(CONFIGS)}")
    parser.add_argument("--search-batch", action="store_true", help="GPU: binary-search the largest batch")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="CPU: configurations run at once (peak RSS is per process; step times then share the cores)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per configuration")
    parser.add_argument("--out", type=Path, default=Path("grpo_memory.json"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0

    for name in ("prompt_len", "completion_len", "prompts_per_step", "steps", "jobs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    names = list(CONFIGS) if args.configs is None else args.configs.split(",")
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown configs {unknown}; choose from {list(CONFIGS)}")
    import torch

    cuda = torch.cuda.is_available() and not args.cpu_proxy
    if not cuda and not args.cpu_proxy:
        parser.error("no GPU here: use --cpu-proxy")
    if args.search_batch and not cuda:
        parser.error("--search-batch needs a GPU (a CPU has no memory wall to search for)")
    if cuda and args.jobs > 1:
        parser.error("--jobs > 1 would share one GPU between configurations; use --jobs 1")
    if not cuda:
        names = [n for n in names if n not in CPU_SKIPS]
    arch = "cpu-proxy" if args.cpu_proxy else args.model

    with tempfile.TemporaryDirectory(prefix="grpo-memory-") as tmp:
        started = time.perf_counter()
        model = build_model(Path(tmp) / "model", arch, cuda=cuda)
        print(f"model {arch} (vocab {VOCAB}) built in {time.perf_counter() - started:.1f} s", flush=True)

        def measure(name: str) -> dict[str, Any] | None:
            spec = {
                "config": name,
                "model": str(model),
                "prompt_len": args.prompt_len,
                "completion_len": args.completion_len,
                "prompts_per_step": args.prompts_per_step,
                "steps": args.steps,
                "output_dir": str(Path(tmp) / name),
            }
            started = time.perf_counter()
            record = run_child(spec, args.timeout)
            if record is None:
                print(f"{name}: out of memory at batch {args.prompts_per_step * GROUP}", flush=True)
                return None
            record["model"] = arch
            record["concurrent_jobs"] = args.jobs
            if args.search_batch:
                record["max_batch"] = largest_batch(spec, args.timeout)
            print(
                f"{name}: peak {record['peak_bytes'] / 2**20:.0f} MB, step {record['step_s']:.2f} s "
                f"({time.perf_counter() - started:.0f} s wall)",
                flush=True,
            )
            return record

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            records = [r for r in pool.map(measure, names) if r is not None]
    ratios(records)
    print(table(records))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records, indent=2) + "\n")
    chart = args.out.with_suffix(".png")
    batch = args.prompts_per_step * GROUP
    plot(
        records,
        chart,
        f"GRPO {arch}, batch {batch}, prompt {args.prompt_len} + completion {args.completion_len}",
    )
    print(f"wrote {args.out} and {chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
