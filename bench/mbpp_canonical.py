"""MBPP's canonical solutions against their own tests, in our sandbox: which fail, and why.

Run from the repo root with the offline copies (nothing downloaded):

    RLVR_GYM_DATA_DIR=../shared/data .venv/bin/python bench/mbpp_canonical.py [--sanitized] [--challenge] [--json out.json]

Every task of every split of ``mbpp-v0`` (974, or 427 with ``--sanitized``) is scored with its
``code`` as the completion, through ``env.verify_batch`` (the sandbox pool, the path training and
eval use). Prints the pass rate per split and one line per failing task with the verdict's reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sanitized", action="store_true", help="sanitized-mbpp.json (427 tasks)")
    parser.add_argument("--challenge", action="store_true", help="add the challenge_test_list asserts")
    parser.add_argument(
        "--unrestricted", action="store_true", help="restricted=False: no RestrictedPython pass"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    from rlvr_gym import envs

    env = envs.make(
        "mbpp",
        sanitized=args.sanitized,
        challenge_tests=args.challenge,
        restricted=not args.unrestricted,
        reveal_tests=True,
    )
    started = time.perf_counter()
    figures: dict[str, dict[str, int]] = {}
    failures = []
    for split in env.splits:
        tasks = list(env.tasks(split))
        parts = env.rubric.score_components_batch([env.reference_completion(t) for t in tasks], tasks)
        verdicts = [part["correct"] for part in parts]  # the code verifier's own verdict: its details say why
        figures[split] = {"tasks": len(tasks), "passed": sum(v.passed for v in verdicts)}
        for task, verdict in zip(tasks, verdicts, strict=True):
            if not verdict.passed:
                failures.append(
                    {"split": split, "task_id": task["task_id"], "reason": str(verdict.reason.value),
                     "details": json.loads(json.dumps(dict(verdict.details), default=repr))}
                )  # fmt: skip
    env.close()
    total = sum(f["tasks"] for f in figures.values())
    passed = sum(f["passed"] for f in figures.values())
    summary = {
        "sanitized": args.sanitized,
        "challenge_tests": args.challenge,
        "restricted": not args.unrestricted,
        "tasks": total,
        "passed": passed,
        "pass_rate": round(passed / total, 4),
        "per_split": figures,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary, indent=2))
    for f in failures:
        print(f"- task {f['task_id']} ({f['split']}): {f['reason']} {json.dumps(f['details'])[:300]}")
    if args.json:
        args.json.write_text(json.dumps({**summary, "failures": failures}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
