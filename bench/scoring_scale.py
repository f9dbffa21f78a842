"""Scoring one realistic GRPO step: ``local`` vs Ray with 1 node vs Ray with 2 simulated nodes.

The step: 512 HumanEval completions (128 problems x 4: two canonical solutions and two wrong
bodies, in a prompt's group of 4) and 2,048 GSM8K completions (256 problems x 8: four reference
answers and four wrong ones). Each backend scores the whole step once to warm up (start-up is
reported apart), then ``--rounds`` times; the median round counts. The same CPUs every time:
``local`` uses this host's pool (``--cpus`` sandbox workers, one math worker), Ray 1 node is
one node of ``--cpus`` CPUs, Ray 2 nodes are two nodes of ``--cpus / 2`` CPUs each (simulated
on this host by ``ray.cluster_utils.Cluster``; every node bound to 127.0.0.1, the head has no
CPUs, as a GPU host that leaves scoring to CPU nodes).

Reported per backend: wall seconds per step (HumanEval, GSM8K, total), CPU seconds of the whole
process tree (driver, Ray's GCS/raylets/actors, sandbox workers) per item, Ray's overhead over
local on one node, and a projection for N real nodes (basis stated in the output). Verdicts are
checked equal to local's.

    python bench/scoring_scale.py [--cpus 2] [--rounds 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("RLVR_GYM_DATA_DIR", str(ROOT.parent / "shared" / "data"))

from rlvr_gym import envs  # noqa: E402
from rlvr_gym.backends.scoring import make_scorer  # noqa: E402
from rlvr_gym.envs.code_env import fenced  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def step() -> dict[str, tuple]:
    """The batches of one step: env, completions, tasks."""
    code = envs.make("humaneval")
    code_tasks, code_completions = [], []
    for task in list(code.tasks("test"))[:128]:
        right = code.reference_completion(task)
        wrongs = [fenced(task["prompt"] + "    return None\n"), fenced(task["prompt"] + "    pass\n")]
        code_completions += [right, wrongs[0], right, wrongs[1]]
        code_tasks += [task] * 4
    math = envs.make("gsm8k")
    math_tasks, math_completions = [], []
    for task in list(math.tasks("test"))[:256]:
        wrong = math.wrong_completions(task)[2:6]  # empty tag, near miss, hedge, no answer
        math_completions += [math.reference_completion(task)] * 4 + wrong
        math_tasks += [task] * 8
    return {"humaneval": (code, code_completions, code_tasks), "gsm8k": (math, math_completions, math_tasks)}


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def tree_cpu_seconds() -> float:
    """CPU seconds (user+system, own and reaped children) of this process and its descendants."""
    me, total = os.getpid(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid, ours = int(entry), False
        for _ in range(64):
            if pid == me:
                ours = True
                break
            if pid <= 1:
                break
            pid = _parent(pid)
        if not ours:
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):
            continue
    return total / TICK


def driver_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def measure(name: str, make, batches: dict, rounds: int, reference: dict | None) -> dict:
    """Median-round wall and CPU of scoring every batch of the step, one scorer per env (made by
    ``make``, warmed on 64 items first so pools and actors are up: steady state, as in training)."""
    per_kind: dict = {}
    verdicts: dict = {}
    extra: dict = {"start_s": 0.0, "actors": {}, "reruns": 0}
    for kind, (env, completions, tasks) in batches.items():
        started = time.perf_counter()
        scorer = make(env)
        scorer.score(completions[:64], tasks[:64])
        extra["start_s"] += time.perf_counter() - started
        try:
            rows = []
            for _ in range(rounds):
                cpu0, driver0 = tree_cpu_seconds(), driver_cpu_seconds()
                started = time.perf_counter()
                verdicts[kind] = scorer.score(completions, tasks, timeout_s=600)
                rows.append(
                    {
                        "wall_s": time.perf_counter() - started,
                        "cpu_s": tree_cpu_seconds() - cpu0,
                        "driver_cpu_s": driver_cpu_seconds() - driver0,
                    }
                )
            per_kind[kind] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
            if hasattr(scorer, "nodes"):
                extra["actors"][kind] = scorer.nodes()
                extra["reruns"] += scorer.stats["rerun_items"]
        finally:
            scorer.close()
    result: dict = {f"{k}_s": v["wall_s"] for k, v in per_kind.items()}
    result["total_s"] = sum(v["wall_s"] for v in per_kind.values())
    result["cpu_s"] = sum(v["cpu_s"] for v in per_kind.values())
    result["driver_cpu_s"] = sum(v["driver_cpu_s"] for v in per_kind.values())
    items = sum(len(b[1]) for b in batches.values())
    result["cpu_ms_per_item"] = 1000 * result["cpu_s"] / items
    result["unscored"] = sum(v is None for vs in verdicts.values() for v in vs)
    dicts = {k: [v.to_dict() if v is not None else None for v in vs] for k, vs in verdicts.items()}
    result["equal_to_local"] = dicts == reference if reference is not None else True
    result["passed"] = {k: sum(bool(v and v.passed) for v in vs) for k, vs in verdicts.items()}
    result.update(extra)
    print(
        f"{name:<12} humaneval {result['humaneval_s']:6.2f} s  gsm8k {result['gsm8k_s']:6.2f} s  "
        f"total {result['total_s']:6.2f} s  cpu {result['cpu_ms_per_item']:5.2f} ms/item  "
        f"start {result['start_s']:5.1f} s  equal to local: {result['equal_to_local']}",
        flush=True,
    )
    return {"result": result, "verdicts": dicts}


def run_ray(name: str, node_cpus: list[int], batches: dict, rounds: int, reference: dict) -> dict:
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # nodes and driver on 127.0.0.1
    from ray.cluster_utils import Cluster

    started = time.perf_counter()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"node_ip_address": "127.0.0.1", "num_cpus": 0, "include_dashboard": False},
    )
    for cpus in node_cpus:
        cluster.add_node(node_ip_address="127.0.0.1", num_cpus=cpus)
    cluster_s = time.perf_counter() - started
    try:
        out = measure(
            name, lambda env: make_scorer(env, "ray", ray_address=cluster.address), batches, rounds, reference
        )
        out["result"]["cluster_start_s"] = cluster_s
        return out
    finally:
        cluster.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=int, default=2, help="CPUs given to each backend (default 2)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    os.environ["RLVR_GYM_SANDBOX_WORKERS"] = str(args.cpus)  # local's pool: the same CPUs
    load_before = os.getloadavg()
    batches = step()
    items = {k: len(b[1]) for k, b in batches.items()}
    print(
        f"one step: {items} completions; {os.cpu_count()} cores here, load {load_before[0]:.2f}", flush=True
    )

    local = measure("local", lambda env: make_scorer(env, "local"), batches, args.rounds, None)
    reference = local["verdicts"]
    half = max(1, args.cpus // 2)
    ray1 = run_ray("ray 1 node", [args.cpus], batches, args.rounds, reference)
    ray2 = run_ray("ray 2 nodes", [half, args.cpus - half], batches, args.rounds, reference)
    load_after = os.getloadavg()

    figures = {"local": local["result"], "ray_1_node": ray1["result"], "ray_2_nodes": ray2["result"]}
    overhead = ray1["result"]["total_s"] / local["result"]["total_s"] - 1
    # Projection: a step's scoring is the driver's serial share (its own CPU while Ray scores:
    # cutting chunks, shipping them, collecting verdicts) plus the rest spread over N nodes of C
    # cores, at the CPU per item measured here with 2 simulated nodes. Assumes items independent
    # (they are), chunks >> N*C (512+2048 items in chunks of <= 64), and no network cost beyond
    # what loopback already charges (real links add ~0.1-1 ms per chunk round trip).
    r2 = ray2["result"]
    driver_s = r2["driver_cpu_s"]
    work_s = max(0.0, r2["cpu_s"] - driver_s)
    projection = {
        f"{n} nodes x {c} cores": round(driver_s + work_s / (n * c), 2) for n in (1, 4, 16) for c in (16, 64)
    }
    print(f"ray overhead over local on one node: {overhead * 100:+.1f}% (goal <= 10%)")
    print(
        f"projection (s per step; basis: driver CPU {driver_s:.2f} s serial + {work_s:.1f} CPU-s of "
        f"scoring spread over N x C cores): {projection}"
    )
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (a shared machine)")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "items": items,
                    "cpus": args.cpus,
                    "rounds": args.rounds,
                    "load_before": load_before,
                    "load_after": load_after,
                    "figures": figures,
                    "ray_overhead_one_node": overhead,
                    "projection_s_per_step": projection,
                },
                indent=2,
                default=str,
            )
            + "\n"
        )
    ok = all(f["equal_to_local"] and not f["unscored"] for f in figures.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
