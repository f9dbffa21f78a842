"""bench/grpo_memory.py runs end to end at a tiny size and writes what it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the memory bench needs rlvr-gym[trl]")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "grpo_memory.py"


@pytest.mark.slow
def test_the_bench_measures_each_configuration_in_its_own_process_and_prints_ratios(tmp_path):
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--cpu-proxy", "--prompt-len", "8", "--completion-len", "8"]
        + ["--steps", "1", "--configs", "vanilla,ours", "--jobs", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = json.loads(out.read_text())
    assert [r["config"] for r in records] == ["vanilla", "ours"]
    for r in records:
        assert r["device"] == "cpu" and r["batch"] == 8
        assert r["mean_completion_len"] == 8, "completions must have the fixed length"
        assert r["peak_bytes"] > r["rss_before_model_bytes"] > 0
        assert r["step_s"] > 0 and r["tokens_per_s"] == pytest.approx(8 * 16 / r["step_s"])
    vanilla, ours = records
    assert vanilla["peak_vs_vanilla"] == 1.0
    assert ours["peak_vs_vanilla"] == pytest.approx(ours["peak_bytes"] / vanilla["peak_bytes"])
    assert ours["loss"] == pytest.approx(vanilla["loss"], rel=1e-3, abs=1e-6), "same run, other losses"
    assert "peak/van" in proc.stdout and "ours" in proc.stdout.splitlines()[-2]
    assert out.with_suffix(".png").stat().st_size > 5000


def test_the_bench_refuses_a_gpu_run_without_a_gpu_and_unknown_configs(tmp_path):
    import torch

    def run(*args):
        return subprocess.run(
            [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=120
        )

    bad = run("--cpu-proxy", "--configs", "vanilla,nope", "--out", str(tmp_path / "x.json"))
    assert bad.returncode == 2 and "unknown configs ['nope']" in bad.stderr
    if not torch.cuda.is_available():
        no_gpu = run("--out", str(tmp_path / "x.json"))
        assert no_gpu.returncode == 2 and "use --cpu-proxy" in no_gpu.stderr
