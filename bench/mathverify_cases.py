"""Cross-check: our MathVerifier on Math-Verify's own test cases (its labels, not ours).

Math-Verify's sdist ships its pytest suite; its ``@pytest.mark.parametrize`` tables of
``(gold, pred, expected)`` are read with :mod:`ast` (``literal_eval`` of each row: their code is
never run or imported, and nothing of theirs is copied into this repository). Run from the repo
root:

    .venv/bin/python bench/mathverify_cases.py [--suite DIR] [--show N]

Without ``--suite`` the sdist of ``math-verify==0.9.0`` is fetched once with ``pip download``
into ``~/.cache/rlvr-gym/math-verify``. Each row is scored as a user would score it: the gold's
committed answer (its ``\\boxed{}``, else what :func:`extract_answer` finds, else the field as
written) goes to ``MathVerifier()`` as the task's answer and the prediction as the completion.
Rows with ``precision=p`` run ``MathVerifier(precision=p)`` where ``p`` is not Math-Verify's
default 6. Rows under a non-default switch we have no counterpart for (``strict=False``,
``allow_set_relation_comp=False``) and rows that are not literals (f-strings) are skipped and
counted. A false positive is a pass where Math-Verify's label says 0.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rlvr_gym.verifiers.math import MathVerifier, extract_answer
from rlvr_gym.verifiers.math.extract import reference_answer

VERSION = "0.9.0"
CACHE = Path.home() / ".cache" / "rlvr-gym" / "math-verify"
LABELS = ("expected", "result")
DEFAULT_PRECISION = 6
SKIP_SWITCHES = {"strict": False, "allow_set_relation_comp": False}
"""Rows under these values test a Math-Verify mode we do not offer; the other value is ours."""


@dataclass(frozen=True)
class Case:
    file: str
    test: str
    gold: str
    pred: str
    expected: bool
    precision: int


def fetch_suite() -> Path:
    """The ``tests`` folder of Math-Verify's sdist, downloaded once with pip."""
    root = CACHE / f"math_verify-{VERSION}"
    if not (root / "tests").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             f"math-verify=={VERSION}", "-d", str(CACHE)],
            check=True,
        )  # fmt: skip
        with tarfile.open(CACHE / f"math_verify-{VERSION}.tar.gz") as archive:
            archive.extractall(CACHE, filter="data")
    return root / "tests"


def _parametrize_tables(tree: ast.Module) -> list[tuple[str, list[str], ast.List]]:
    tables = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            if (
                isinstance(decorator, ast.Call)
                and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "parametrize"
                and len(decorator.args) >= 2
                and isinstance(decorator.args[0], ast.Constant)
                and isinstance(decorator.args[1], ast.List)
            ):
                names = [name.strip() for name in str(decorator.args[0].value).split(",")]
                tables.append((node.name, names, decorator.args[1]))
    return tables


def load_cases(suite: Path) -> tuple[list[Case], Counter[str]]:
    """Every literal ``(gold, pred, ..., expected)`` row of the suite, and what was skipped (why)."""
    cases: list[Case] = []
    skipped: Counter[str] = Counter()
    for path in sorted(suite.glob("test_*.py")):
        for test, names, table in _parametrize_tables(ast.parse(path.read_text())):
            label = next((name for name in LABELS if name in names), None)
            if "gold" not in names or "pred" not in names or label is None:
                continue
            for row in table.elts:
                try:
                    values = dict(zip(names, ast.literal_eval(row), strict=True))
                except (ValueError, TypeError, SyntaxError):
                    skipped["not a literal"] += 1
                    continue
                switch = next((k for k, v in SKIP_SWITCHES.items() if values.get(k) is v), None)
                if switch is not None:
                    skipped[f"{switch}={SKIP_SWITCHES[switch]}"] += 1
                    continue
                precision = int(values.get("precision", DEFAULT_PRECISION))
                cases.append(
                    Case(path.name, test, values["gold"], values["pred"], bool(values[label]), precision)
                )
    return cases, skipped


def gold_answer(gold: str) -> str:
    """The answer a gold field commits to (its box, else the extracted answer, else the field)."""
    if "\\boxed" in gold or "\\fbox" in gold:
        return reference_answer(gold)
    return extract_answer(gold) or gold


def run(cases: list[Case]) -> list[bool]:
    """Our verdict (passed or not) for each case."""
    verifiers: dict[int, MathVerifier] = {}
    passed = []
    for case in cases:
        if case.precision not in verifiers:
            options = {} if case.precision == DEFAULT_PRECISION else {"precision": case.precision}
            verifiers[case.precision] = MathVerifier(**options)
        passed.append(verifiers[case.precision](case.pred, {"answer": gold_answer(case.gold)}).passed)
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=None, help="Math-Verify's tests/ folder")
    parser.add_argument("--show", type=int, default=40, help="disagreements to list")
    args = parser.parse_args()
    cases, skipped = load_cases(args.suite or fetch_suite())
    passed = run(cases)
    agree = [p == c.expected for p, c in zip(passed, cases, strict=True)]
    false_pos = [c for p, c in zip(passed, cases, strict=True) if p and not c.expected]
    false_neg = [c for p, c in zip(passed, cases, strict=True) if not p and c.expected]
    print(f"Math-Verify {VERSION} test rows scored: {len(cases)} (skipped: {dict(skipped) or 'none'})")
    print(f"agreement with its labels: {sum(agree)}/{len(cases)} = {sum(agree) / len(cases):.4f}")
    print(f"false positives (we pass, label 0): {len(false_pos)}")
    print(f"false negatives (we fail, label 1): {len(false_neg)}")
    by_file: dict[str, list[bool]] = {}
    for case, ok in zip(cases, agree, strict=True):
        by_file.setdefault(f"{case.file}::{case.test}", []).append(ok)
    for name, oks in by_file.items():
        print(f"  {name:<60}{sum(oks):>4}/{len(oks)}")
    for case in (false_pos + false_neg)[: args.show]:
        kind = "FP" if case in false_pos else "FN"
        print(f"  {kind} {case.test}: gold {case.gold[-80:]!r} pred {case.pred[-100:]!r}")


if __name__ == "__main__":
    main()
