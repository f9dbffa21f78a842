"""GRPO really learns: the README's main job, measured (slow, still in CI: about a minute)."""

from __future__ import annotations

import pytest

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

from rlvr_gym.backends.config import TINY_DEMO, RunConfig
from rlvr_gym.trainers.train import train

# From repeated runs of exactly this configuration (seeds 0, 1, 2 on a 2-core CPU), the mean
# reward of the last fifth of steps exceeded the first fifth's by 0.118, 0.132, 0.128; a margin of half
# the smallest rise fails a run that does not learn, not one that learns a little slower.
MARGIN = 0.06


def fifths(values: list[float]) -> tuple[float, float]:
    n = max(1, len(values) // 5)
    return sum(values[:n]) / n, sum(values[-n:]) / n


@pytest.mark.slow
def test_grpo_raises_the_reward_of_the_tiny_model_on_arith(tmp_path):
    config = RunConfig(env_id="arith", output_dir=str(tmp_path / "run"), seed=0, save_steps=1000, **TINY_DEMO)
    result = train("arith", config, backend="trl")
    rewards = [row["reward/mean"] for row in result.metrics if "reward/mean" in row]
    assert len(rewards) == TINY_DEMO["max_steps"]
    first, last = fifths(rewards)
    assert last - first >= MARGIN, f"reward went {first:.3f} -> {last:.3f}: no learning"
    zero_variance_first, zero_variance_last = fifths([row["zero_variance_groups"] for row in result.metrics])
    assert zero_variance_last <= zero_variance_first
