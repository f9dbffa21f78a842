"""bench/gpu_acceptance.py on a CPU machine: the dry run lists every run and its command, the real
run refuses with exit code 2, and every run's config is a valid RunConfig on the shipped configs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_acceptance.py"
RUNS = ["trl-bf16", "trl-liger", "deepspeed-zero2-offload-lora", "fsdp2-transformers", "eval"]


def load():
    spec = importlib.util.spec_from_file_location("gpu_acceptance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_dry_run_lists_each_run_on_both_architectures_with_its_command(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    listed = [line.split()[:2] for line in lines if not line.startswith("    ")]
    assert listed == [[arch, run] for arch in ("qwen3-0.6b", "qwen2.5-1.5b") for run in RUNS]
    commands = [line.split() for line in lines if line.startswith("    ")]
    assert len(commands) == 10
    for (arch, run), command in zip(listed, commands, strict=True):
        assert command[1] == str(SCRIPT) and command[command.index("--worker") + 1] == run
        assert command[command.index("--arch") + 1] == arch
    assert not any(tmp_path.iterdir()), "a dry run wrote something"


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or __import__("torch").cuda.is_available(),
    reason="CPU-only check",
)
def test_without_cuda_it_says_so_and_exits_2(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--only", "eval"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "no CUDA" in done.stderr


def test_each_runs_config_is_valid_and_the_shipped_configs_are_the_published_shapes(tmp_path):
    pytest.importorskip("transformers")
    from transformers import AutoConfig

    bench = load()
    assert [r.name for r in bench.runs()] == RUNS
    for arch, path in bench.CONFIGS.items():
        config = AutoConfig.from_pretrained(str(path))
        assert config.vocab_size == 151936 and config.num_hidden_layers == 28, arch
        assert config.model_type == {"qwen3-0.6b": "qwen3", "qwen2.5-1.5b": "qwen2"}[arch]
        assert json.loads(path.read_text())["tie_word_embeddings"] is True
        for run in bench.runs():
            config = bench.run_config(run, arch, tmp_path)
            assert config.env_id == "gsm8k" and config.max_steps == bench.STEPS
    zero = next(r for r in bench.runs() if r.backend == "deepspeed-zero2")
    lora = bench.run_config(zero, "qwen2.5-1.5b", tmp_path).lora
    assert lora is not None and lora.r == 16
    fsdp = next(r for r in bench.runs() if r.backend == "fsdp")
    assert fsdp.options == {"generation": "transformers"}
