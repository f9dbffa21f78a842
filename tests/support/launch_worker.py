"""A backend worker module for the launch test: each rank records itself; rank 0 leaves what a
finished run leaves (transformers' trainer_state.json), so the launcher's caller can read it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rlvr_gym.backends.engine.launch import worker_main

STEPS = 3


def train_here(env, config, *, model, resume, overrides):
    out = Path(config.output_dir)
    rank = int(os.environ["RANK"])
    (out / f"rank{rank}.json").write_text(json.dumps({"env": env.id, "model": model, **overrides}))
    if rank == 0:
        (out / "metrics.jsonl").write_text(json.dumps({"step": 2, "reward/mean": 0.5}) + "\n")
        (out / "trainer_state.json").write_text(json.dumps({"global_step": STEPS}))


if __name__ == "__main__":
    raise SystemExit(worker_main(train_here, "test", sys.argv[1:]))
