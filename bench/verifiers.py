"""Benchmark: our MathVerifier vs Math-Verify on GSM8K-style completions, plus MATH-500 self-checks.

Run from the repo root (single core, one process; Math-Verify from the ``dev`` extra):

    taskset -c 0 .venv/bin/python bench/verifiers.py [--data ../shared/data] [--limit N]

Completions are built from ``gsm8k_test.jsonl``: each gold answer rendered correctly in several
formats, and wrong ones (off by one, hedged, no answer). Both verifiers see the same inputs in
the same run; the figures are verifications per second and agreement with the labels.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path

from rlvr_gym.envs.math500 import distinct_answers
from rlvr_gym.verifiers.math import MathVerifier, normalize

CORRECT_FORMATS = (
    "Let me compute step by step.\n{s}\n#### {a}",
    "{s}\nThe answer is {a}.",
    "{s}\nSo the final answer is $\\boxed{{{a}}}$.",
    "<think>{s}</think>\n<answer>{a}</answer>",
    "{s}\nThe final answer is ${c}.",
    "{s}\nThe answer is {a}.00",
    "{s}\nThe answer is {a} dollars.",
    "{s}\nSo we get $\\boxed{{{a} \\text{{ apples}}}}$",
)
WRONG_FORMATS = (
    "{s}\n#### {w}",
    "{s}\nThe answer is $\\boxed{{{w}}}$.",
    "<think>{s}</think>\n<answer>{a} or {w}</answer>",
    "{s}\nI am not sure what the answer is.",
    "{t}",
    "<think>{t}",
    "{s}\nSo the final answer is $\\boxed{{{a}",
    "{s}\nSo the answer is {a} +",
)


FORMAT_NAMES = (
    "correct: #### x",
    "correct: the answer is x.",
    "correct: \\boxed{x}",
    "correct: <answer>x</answer>",
    "correct: $1,234.",
    "correct: x.00",
    "correct: x dollars.",
    "correct: \\boxed{x \\text{ apples}}",
    "wrong: #### x+1",
    "wrong: \\boxed{x+1}",
    "wrong: hedged x or x+1",
    "wrong: no final answer (last line of working holds x)",
    "wrong: cut off mid-reasoning (no answer committed)",
    "wrong: cut off inside <think>",
    "wrong: cut off inside the box",
    "wrong: cut off after the answer's first term",
)


def build_cases(data: Path, limit: int | None) -> list[tuple[str, str, bool]]:
    rows = [json.loads(line) for line in (data / "gsm8k_test.jsonl").open()]
    cases = []
    for row in rows[:limit]:
        solution, _, final = row["answer"].rpartition("####")
        gold = final.strip().replace(",", "")
        steps = solution.strip().splitlines()[-1] if solution.strip() else ""
        value = int(gold)
        working = solution.strip()
        truncated = working[: max(1, len(working) * 2 // 3)]  # cut before the answer is committed
        fields = {"s": steps, "a": gold, "c": f"{value:,}", "w": str(value + 1), "t": truncated}
        cases += [(f.format(**fields), gold, True) for f in CORRECT_FORMATS]
        cases += [(f.format(**fields), gold, False) for f in WRONG_FORMATS]
    return cases


def ours(verifier: MathVerifier, cases: list[tuple[str, str, bool]]) -> list[bool]:
    """For each case, whether our verdict agrees with the label."""
    return [verifier(c, {"answer": g}).passed == label for c, g, label in cases]


def math_verify(cases: list[tuple[str, str, bool]]) -> list[bool]:
    """For each case, whether Math-Verify agrees with the label (gold in ``$...$``, as its docs do)."""
    from math_verify import parse, verify

    agree = []
    for completion, gold, label in cases:
        try:
            ok = bool(verify(parse(f"${gold}$"), parse(completion)))
        except Exception:  # noqa: BLE001 - the anchor may fail on any input; count it as "no"
            ok = False
        agree.append(ok == label)
    return agree


def compare(cases: list[tuple[str, str, bool]], chunks: int = 40) -> dict[str, tuple[float, list[bool]]]:
    """Rate and agreement of both verifiers, measured in alternating chunks of the same cases.

    Alternating keeps the ratio fair on a shared machine whose load changes during the run.
    """
    verifier = MathVerifier()
    verifier.warm_up()
    math_verify(cases[:5])  # import and warm Math-Verify outside the timing
    seconds = {"rlvr-gym": 0.0, "math-verify": 0.0}
    agree: dict[str, list[bool]] = {"rlvr-gym": [], "math-verify": []}
    size = max(1, len(cases) // chunks)
    for start in range(0, len(cases), size):
        chunk = cases[start : start + size]
        for name, run in (("rlvr-gym", lambda c: ours(verifier, c)), ("math-verify", math_verify)):
            began = time.perf_counter()
            agree[name] += run(chunk)
            seconds[name] += time.perf_counter() - began
    return {name: (len(cases) / seconds[name], agree[name]) for name in seconds}


def math500_figures(data: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (data / "math500_test.jsonl").open()]
    verifier = MathVerifier()
    verifier.warm_up()
    boxed = forms = forms_total = rejected = rejected_total = 0
    failures: list[str] = []
    started = time.perf_counter()
    for index, row in enumerate(rows):
        gold = row["answer"]
        if verifier(f"Thus \\boxed{{{gold}}}", {"answer": gold}).passed:
            boxed += 1
        else:
            failures.append(f"boxed: {gold}")
        for form in {normalize(gold), f"${gold}$", gold.replace("\\frac", "\\dfrac")}:
            forms_total += 1
            if verifier(f"\\boxed{{{form}}}", {"answer": gold}).passed:
                forms += 1
            else:
                failures.append(f"form: {gold} vs {form}")
        others = [
            r["answer"] for r in rows[index + 1 :] + rows[:index] if distinct_answers(r["answer"], gold)
        ]
        other = others[0]
        rejected_total += 1
        if not verifier(f"\\boxed{{{other}}}", {"answer": gold}).passed:
            rejected += 1
        else:
            failures.append(f"accepted wrong: {gold} vs {other}")
    seconds = time.perf_counter() - started
    return {
        "gold ≡ \\boxed{gold}": f"{boxed}/{len(rows)}",
        "gold ≡ its normalized forms": f"{forms}/{forms_total}",
        "another problem's answer rejected": f"{rejected}/{rejected_total}",
        "seconds": f"{seconds:.1f}",
        "failures": "; ".join(failures[:10]) or "none",
    }


def form_cases() -> list[tuple[str, str, bool]]:
    """The answer-form table of ``tests/support/math_forms.py`` (written for issue 13, labels by hand)."""
    path = Path(__file__).resolve().parents[1] / "tests" / "math_forms.py"
    spec = importlib.util.spec_from_file_location("math_forms", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(completion, gold, label) for _, gold, completion, label in module.CASES]


def math500_agreement(data: Path) -> tuple[int, int, list[str]]:
    """How often our verdict equals Math-Verify's on MATH-500 answer pairs (gold vs itself boxed,
    its normalized form, and another problem's answer)."""
    from math_verify import parse, verify

    rows = [json.loads(line) for line in (data / "math500_test.jsonl").open()]
    verifier = MathVerifier()
    verifier.warm_up()
    same = total = 0
    differ: list[str] = []
    for index, row in enumerate(rows):
        gold = row["answer"]
        other = next(
            r["answer"] for r in rows[index + 1 :] + rows[:index] if distinct_answers(r["answer"], gold)
        )
        for pred in (gold, normalize(gold), other):
            completion = f"So the answer is $\\boxed{{{pred}}}$."
            ours_ok = verifier(completion, {"answer": gold}).passed
            try:
                theirs = bool(verify(parse(f"$\\boxed{{{gold}}}$"), parse(completion)))
            except Exception:  # noqa: BLE001 - the anchor may fail on any input; count it as "no"
                theirs = False
            total += 1
            same += ours_ok == theirs
            if ours_ok != theirs:
                differ.append(f"gold {gold!r} vs {pred!r}: ours {ours_ok}, math-verify {theirs}")
    return same, total, differ


def math500_cases(data: Path) -> list[tuple[str, str, bool]]:
    """MATH-500 completions: gold in \\boxed{} (correct) and another problem's answer (wrong)."""
    rows = [json.loads(line) for line in (data / "math500_test.jsonl").open()]
    cases = []
    for index, row in enumerate(rows):
        gold = row["answer"]
        other = next(
            r["answer"] for r in rows[index + 1 :] + rows[:index] if distinct_answers(r["answer"], gold)
        )
        cases += [
            (f"So the answer is $\\boxed{{{gold}}}$.", gold, True),
            (f"So the answer is $\\boxed{{{other}}}$.", gold, False),
        ]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None, help="GSM8K rows to use (default: all 1,319)")
    args = parser.parse_args()
    cases = build_cases(args.data, args.limit)
    print(
        f"GSM8K-style completions: {len(cases)} ({sum(c[2] for c in cases)} correct, {sum(not c[2] for c in cases)} wrong)"
    )
    results = compare(cases)
    (ours_rate, ours_agree), (mv_rate, mv_agree) = results["rlvr-gym"], results["math-verify"]
    print(f"{'verifier':<14}{'verif/s':>12}{'agreement':>12}")
    print(f"{'rlvr-gym':<14}{ours_rate:>12,.0f}{sum(ours_agree) / len(cases):>12.4f}")
    print(f"{'math-verify':<14}{mv_rate:>12,.0f}{sum(mv_agree) / len(cases):>12.4f}")
    print(f"throughput ratio (ours / math-verify): {ours_rate / mv_rate:.1f}x")
    print("agreement by completion format (rlvr-gym / math-verify):")
    per_row = len(FORMAT_NAMES)
    for index, name in enumerate(FORMAT_NAMES):
        mine, theirs = ours_agree[index::per_row], mv_agree[index::per_row]
        print(f"  {name:<56}{sum(mine) / len(mine):>8.4f}{sum(theirs) / len(theirs):>8.4f}")
    forms = form_cases()
    results = compare(forms, chunks=10)
    print(f"Answer forms of every family (tests/support/math_forms.py, {len(forms)} completions, labels by hand):")
    for name, (rate, agreed) in results.items():
        print(f"  {name:<12}{rate:>10,.0f} verif/s  agreement {sum(agreed) / len(forms):.4f}")
    same, total, differ = math500_agreement(args.data)
    print(f"MATH-500 verdicts equal to Math-Verify's: {same}/{total} = {same / total:.4f}")
    for line in differ[:15]:
        print(f"  differ: {line}")
    symbolic = math500_cases(args.data)
    results = compare(symbolic)
    print(f"MATH-500 boxed gold vs another problem's answer ({len(symbolic)} completions, symbolic path):")
    for name, (rate, agreed) in results.items():
        print(f"  {name:<12}{rate:>10,.0f} verif/s  agreement {sum(agreed) / len(symbolic):.4f}")
    print("MATH-500 self-equivalence:")
    for key, value in math500_figures(args.data).items():
        print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
