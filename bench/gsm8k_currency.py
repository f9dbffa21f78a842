"""GSM8K's own worked solutions, less their ``#### answer`` line, scored with ``last_number_fallback``.

    RLVR_GYM_DATA_DIR=../shared/data .venv/bin/python bench/gsm8k_currency.py [--split test]

A solution that ends on its result ("... = $330") is a correct answer written without a marker:
the fallback should read its final number. Reports the pass rate of solutions with and without a
``$`` sign (currency), and the first misses. Before the inline-math fix a ``$`` pair in
"$30 + $300 = $330" was read as TeX math and the answer came out as ``300 =``.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("train", "test"))
    parser.add_argument("--show", type=int, default=5, help="misses to print")
    args = parser.parse_args(argv)

    from rlvr_gym import envs
    from rlvr_gym.verifiers.math import extract_answer

    env = envs.make("gsm8k", last_number_fallback=True)
    tasks = list(env.tasks(args.split))
    completions = [t["solution"] for t in tasks]
    verdicts = env.verify_batch(completions, tasks)
    groups: dict[str, list[int]] = {"with_dollar": [], "without_dollar": []}
    misses = []
    for task, completion, verdict in zip(tasks, completions, verdicts, strict=True):
        group = "with_dollar" if "$" in completion else "without_dollar"
        groups[group].append(verdict.passed)
        if not verdict.passed and group == "with_dollar":
            misses.append(
                (task["answer"], extract_answer(completion, last_number_fallback=True), completion[-120:])
            )
    figures = {
        name: {"solutions": len(v), "passed": sum(v), "pass_rate": round(sum(v) / len(v), 4)}
        for name, v in groups.items()
    }
    print(json.dumps({"split": args.split, **figures}, indent=2))
    for gold, got, tail in misses[: args.show]:
        print(f"- gold {gold} read {got!r}: ...{tail!r}")
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
