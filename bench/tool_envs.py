"""Tool envs: ``run_python`` latency per call, and episode scoring throughput.

* latency: one call at a time, through ``PythonTool.run`` (the sandbox alone) and through
  ``env.step`` on ``gsm8k-python`` (parsing, the tool, the episode record); median and p95.
* throughput: scripted ``gsm8k-python`` episodes (one ``run_python`` call, then the final answer,
  scored by the math verifier), played one after another; and the same episodes' tool calls as
  one ``run_batch`` on the pool (what a trainer that batches tool calls across rollouts gets).

    RLVR_GYM_DATA_DIR=/path/to/data python bench/tool_envs.py [--calls 200] [--episodes 100] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from rlvr_gym import envs
from rlvr_gym.verifiers.code.tool import PythonTool

PROGRAMS = [
    "print(4 + 2 * 3.5)",
    "import math\nprint(math.comb(52, 5))",
    "from fractions import Fraction\nprint(Fraction(3, 4) + Fraction(5, 6))",
    "total = 0\nfor i in range(1, 101):\n    total += i * i\nprint(total)",
]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": statistics.median(ordered) * 1e3, "p95_ms": p95 * 1e3, "n": len(ordered)}


def tool_latency(calls: int) -> dict[str, float]:
    tool = PythonTool()
    tool.run("print(0)")  # start the pool's workers outside the timing
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        result = tool.run(PROGRAMS[i % len(PROGRAMS)])
        samples.append(time.perf_counter() - started)
        if not result.ok:
            raise SystemExit(f"bench program failed: {result.render()}")
    return percentiles(samples)


def step_latency(env, calls: int) -> dict[str, float]:
    samples = []
    for i in range(calls):
        env.reset(seed=i)
        action = env.tool_call("run_python", code=PROGRAMS[i % len(PROGRAMS)])
        started = time.perf_counter()
        env.step(action)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def episodes(env, count: int) -> dict[str, float]:
    started = time.perf_counter()
    passed = 0
    for i in range(count):
        _, info = env.reset(options={"index": i})
        gold = info["task"]["answer"]
        env.step(env.tool_call("run_python", code=f"print({gold})"))
        _, reward, terminated, _, _ = env.step(f"<answer>{gold}</answer>")
        passed += terminated and reward == 1.0
    elapsed = time.perf_counter() - started
    if passed != count:
        raise SystemExit(f"only {passed}/{count} scripted episodes passed")
    return {"episodes_per_s": count / elapsed, "seconds": elapsed, "n": count}


def batched_calls(count: int) -> dict[str, float]:
    tool = PythonTool()
    codes = [PROGRAMS[i % len(PROGRAMS)] for i in range(count)]
    tool.run_batch(codes[:2])
    started = time.perf_counter()
    results = tool.run_batch(codes)
    elapsed = time.perf_counter() - started
    if not all(r.ok for r in results):
        raise SystemExit("a batched program failed")
    return {"calls_per_s": count / elapsed, "workers": tool.pool.size, "n": count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    env = envs.make("gsm8k-python")
    report = {
        "run_python (PythonTool.run)": tool_latency(args.calls),
        "run_python via env.step": step_latency(env, args.calls),
        "episodes, sequential (tool call + final answer)": episodes(env, args.episodes),
        "run_python, one run_batch": batched_calls(args.calls),
    }
    env.close()
    for name, figures in report.items():
        print(
            f"{name}: "
            + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
