"""``humaneval-feedback`` against policies that never implement the function (issue 34).

Plays, on every HumanEval task, the audit's lookup-table policy (values guessed for the calls
the feedback names, several tables a message) and its feedback-replay policy (the reference
consulted only on the calls the feedback named), and counts the tasks where each reaches
reward 1.0 and the mean reward. An env where only generalising code pays gives ~0 for both.

    RLVR_GYM_DATA_DIR=/path/to/data python bench/feedback_lookup.py [--limit 164] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

from rlvr_gym import envs
from rlvr_gym.envs.audit import _subjects
from rlvr_gym.envs.tool_exploits import lookup_table_policy, play, replay_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=164)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    env = envs.make("humaneval-feedback")
    tasks = env.tasks("test")[: args.limit]
    started = time.perf_counter()
    results: dict[str, dict[str, float]] = {}
    for name in ("lookup_table", "feedback_replay"):
        full, total = [], 0.0
        for index, subject in enumerate(_subjects(env, tasks, list(range(len(tasks))))):
            policy = (
                lookup_table_policy(env, subject.task)
                if name == "lookup_table"
                else replay_policy(env, subject)
            )
            verdict = play(env, "test", index, policy)
            total += verdict.score
            if verdict.score == 1.0:
                full.append(index)
        results[name] = {
            "tasks": len(tasks),
            "reward_1": len(full),
            "mean_reward": total / len(tasks),
            "which": full,
        }
        print(
            f"{name}: {len(full)} of {len(tasks)} tasks at reward 1.0, mean reward {total / len(tasks):.3f}"
        )
    env.close()
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
