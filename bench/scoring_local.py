"""What the ``local`` scorer's worker process costs a batch of easy items, against the thread.

``isolation="process"`` (the default: a worker process, verdicts streamed item by item, so a
slow item can be stopped and charged alone) vs ``isolation="thread"`` (the path every batch took
before: ``verify_batch`` in a daemon thread of the trainer's process). Same env, same batch of
``--items`` easy completions (half right, half wrong); the two arms alternate batch by batch for
``--batches`` rounds after a warm-up, and the median of each is reported with the ratio and the
difference. The worker's one-time start (import + loading the env) is reported apart.

    RLVR_GYM_DATA_DIR=/path/to/data python bench/scoring_local.py [--env arith] [--items 16] [--batches 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("RLVR_GYM_DATA_DIR", str(ROOT.parent / "shared" / "data"))

from rlvr_gym import envs  # noqa: E402
from rlvr_gym.backends.scoring.local import LocalScorer  # noqa: E402


def batch(env_id: str, items: int) -> tuple:
    env = envs.make(env_id)
    tasks = [env.tasks("test")[i // 2] for i in range(items)]
    completions = [
        env.reference_completion(t) if i % 2 == 0 else env.wrong_completions(t)[-1]
        for i, t in enumerate(tasks)
    ]
    return env, completions, tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--env", default="arith")
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    env, completions, tasks = batch(args.env, args.items)
    started = time.perf_counter()
    arms = {"process": LocalScorer(env, isolation="process"), "thread": LocalScorer(env, isolation="thread")}
    assert arms["process"].start(), "the env did not load in a worker process"
    start_s = time.perf_counter() - started
    times: dict[str, list[float]] = {name: [] for name in arms}
    try:
        for name, scorer in arms.items():  # warm both: the worker's pools, the thread
            got = scorer.score(completions, tasks, timeout_s=60)
            assert [v.to_dict() if v else None for v in got] == [
                v.to_dict() for v in env.verify_batch(completions, tasks)
            ], name
        for _ in range(args.batches):
            for name, scorer in arms.items():
                t0 = time.perf_counter()
                scorer.score(completions, tasks, timeout_s=60)
                times[name].append(time.perf_counter() - t0)
    finally:
        for scorer in arms.values():
            scorer.close()
    median = {name: statistics.median(ts) * 1e3 for name, ts in times.items()}
    result = {
        "env": args.env,
        "items": args.items,
        "batches": args.batches,
        "worker_start_s": round(start_s, 3),
        "median_ms": {k: round(v, 3) for k, v in median.items()},
        "p90_ms": {k: round(sorted(ts)[int(0.9 * len(ts))] * 1e3, 3) for k, ts in times.items()},
        "process_minus_thread_ms": round(median["process"] - median["thread"], 3),
        "process_over_thread": round(median["process"] / median["thread"], 2),
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
