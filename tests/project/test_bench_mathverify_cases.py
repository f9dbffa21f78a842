"""bench/mathverify_cases.py reads a parametrize table without running it and scores each row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "mathverify_cases.py"

SUITE = """
import math
import pytest

@pytest.mark.parametrize(
    "gold, pred, expected",
    [
        ("$5$", "So the answer is $\\\\boxed{5}$.", 1),
        ("$5$", "So the answer is $\\\\boxed{6}$.", 1),
        ("$5$", "So the answer is $\\\\boxed{6}$.", 0),
        (f"{math.sqrt(17):.3f}", "$\\\\sqrt{17}$", 1),
    ],
)
def test_numbers(gold, pred, expected):
    raise SystemExit("the suite's code must never run")

@pytest.mark.parametrize("gold, pred, strict, expected", [("$f(x)$", "$f(y)$", False, 1)])
def test_strict(gold, pred, strict, expected):
    raise SystemExit("never run")

@pytest.mark.parametrize("gold,pred,expected,precision", [("$\\\\frac{1}{3}$", "$0.33$", 1, 2)])
def test_precision(gold, pred, expected, precision):
    raise SystemExit("never run")
"""


def test_the_table_is_read_not_run_and_each_row_scored(tmp_path: Path) -> None:
    (tmp_path / "test_fake.py").write_text(SUITE)
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--suite", str(tmp_path), "--show", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "test rows scored: 4 (skipped: {'not a literal': 1, 'strict=False': 1})" in out
    assert "agreement with its labels: 3/4 = 0.7500" in out  # the mislabelled row disagrees
    assert "false positives (we pass, label 0): 0" in out
    assert "false negatives (we fail, label 1): 1" in out
    assert (
        "test_fake.py::test_precision" in out and "1/1" in out
    )  # precision=2 row: MathVerifier(precision=2)
