"""TRL trains through ``environment_factory`` on an env served by ``rlvr-gym serve``, talking to it
with OpenEnv's own client (the pattern of TRL's OpenEnv docs; 2 steps, tiny model, CPU)."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")
pytest.importorskip("openenv.core", reason="needs rlvr-gym[openenv]")


@pytest.mark.slow
def test_trl_trains_two_steps_against_the_server(tmp_path, monkeypatch):
    from trl import GRPOConfig, GRPOTrainer

    from rlvr_gym import envs
    from rlvr_gym.backends.serve import ServeOptions, running
    from rlvr_gym.backends.serve.remote import remote_env, remote_reward
    from rlvr_gym.backends.trl_adapter import dataset
    from rlvr_gym.trainers.tiny_model import build_tiny_model

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    knobs = {"train_size": 16, "max_operand": 9}
    env = envs.make("arith", **knobs)
    model_dir = build_tiny_model(tmp_path / "tiny", env, tools=True, vocab_size=512)
    scored: list[float | None] = []

    def reward(completions, environments, **kwargs):
        rewards = remote_reward(completions, environments, **kwargs)
        scored.extend(rewards)
        return rewards

    with running(["arith"], knobs={"arith": knobs}, options=ServeOptions(max_sessions=16)) as url:
        trainer = GRPOTrainer(
            model=str(model_dir),
            train_dataset=dataset(env, "train"),
            environment_factory=remote_env(f"{url}/arith"),
            reward_funcs=[reward],
            args=GRPOConfig(
                output_dir=str(tmp_path / "run"),
                max_steps=2,
                per_device_train_batch_size=4,
                num_generations=4,
                max_completion_length=12,
                learning_rate=1e-4,
                use_cpu=True,
                bf16=False,
                save_strategy="no",
                report_to=[],
                logging_steps=1,
            ),
        )
        trainer.train()
        sessions = trainer._environment_pool[None]
    assert trainer.state.global_step == 2
    assert len(scored) == 8 and all(
        r is not None and 0.0 <= r <= 1.0 for r in scored
    )  # the server scored all
    logs = [row for row in trainer.state.log_history if "rewards/reward/mean" in row]
    assert len(logs) == 2 and all(not math.isnan(row["rewards/reward/mean"]) for row in logs)
    # each rollout's session holds the server's verdict for the task its row named
    assert all(s._observation.get("env_id") == "arith-v0" and s._observation.get("reason") for s in sessions)
