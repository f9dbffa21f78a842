"""Each catalogue env trains 10 GRPO steps with the tiny offline model (the real TRL trainer)."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

from rlvr_gym import envs
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.metrics import read_metrics
from rlvr_gym.trainers.tiny_model import build_tiny_model
from rlvr_gym.trainers.train import train

STEPS = 10


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("countdown", {}),
        ("ifeval", {}),
        # a bridged dataset whose hardened scoring passes the audit (train runs the audit first)
        ("reasoning_gym/ab", {"hardened": True, "test_size": 8}),
    ],
)
def test_a_catalogue_env_trains_ten_steps_with_the_tiny_model(tmp_path, env_id, kwargs):
    if env_id.startswith("reasoning_gym/"):
        pytest.importorskip("reasoning_gym", reason="needs rlvr-gym[reasoning-gym]")
    env = envs.make(env_id, train_size=64, **kwargs)
    model = build_tiny_model(tmp_path / "tiny", env)
    config = RunConfig(
        model=str(model),
        max_steps=STEPS,
        num_generations=2,
        prompts_per_step=2,
        max_completion_length=8,
        learning_rate=1e-3,
        save_steps=100,
        output_dir=str(tmp_path / "run"),
    )
    result = train(env, config, backend="trl")  # runs the fast audit first: it must pass
    rows = read_metrics(result.output_dir)
    assert len(rows) == STEPS
    assert all(math.isfinite(row["reward/mean"]) for row in rows)
    assert {f"reward/{name}/mean" for name in env.rubric.normalized_weights} <= rows[-1].keys()
