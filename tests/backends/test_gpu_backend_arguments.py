"""The arguments the GPU backends (FSDP2, DeepSpeed ZeRO-2) hand TRL, decided and checked on a
CPU: each test here failed on the code a reading found wrong. The check transformers runs only
once accelerate enables FSDP (CUDA) is called for real by the CUDA test below, not replayed here; on a CPU the tests assert
our own contract on the argument objects transformers would receive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

import torch

from rlvr_gym import backends, envs
from rlvr_gym.backends import fsdp_vllm
from rlvr_gym.backends import trl as trl_backend
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.rewards import EnvRewards
from rlvr_gym.error import InvalidArgumentError, NotAvailableError
from rlvr_gym.trainers.tiny_model import build_tiny_model
from tests.support.torchrun import run_ranks, run_two_ranks

ROOT = Path(__file__).resolve().parents[2]
ON_CPU = not torch.cuda.is_available()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), envs.make("arith"))


@pytest.fixture
def rewards():
    handle = EnvRewards(envs.make("arith"), num_generations=4, timeout_s=10)
    yield handle
    handle.close()


@pytest.mark.parametrize("generation", ["vllm", "transformers"])
@pytest.mark.parametrize("checkpointing", [True, False])
def test_fsdp_arguments_never_set_both_checkpointings(
    tiny_model, tmp_path, rewards, generation, checkpointing
):
    config = RunConfig(model=str(tiny_model), gradient_checkpointing=checkpointing, output_dir=str(tmp_path))
    overrides = fsdp_vllm.fsdp_overrides(
        tiny_model,
        mode="colocate",
        generation=generation,
        activation_checkpointing=config.gradient_checkpointing,
    )
    args = trl_backend.trl_config(config, rewards, **overrides)
    # The run's choice survives as FSDP's own activation checkpointing, never as both.
    assert args.fsdp_plugin_args["activation_checkpointing"] is checkpointing
    assert args.gradient_checkpointing is False


def test_fsdp_default_overrides_on_the_default_config_do_not_conflict(tiny_model, tmp_path, rewards):
    # What the code did before: the default config (gradient_checkpointing=True) + default overrides.
    config = RunConfig(model=str(tiny_model), output_dir=str(tmp_path))
    args = trl_backend.trl_config(config, rewards, **fsdp_vllm.fsdp_overrides(tiny_model, mode="colocate"))
    assert args.gradient_checkpointing is False and args.fsdp_plugin_args["activation_checkpointing"] is True


@pytest.mark.slow
@pytest.mark.skipif(
    ON_CPU, reason="transformers checks FSDP arguments only once accelerate enables FSDP (CUDA)"
)
def test_transformers_own_fsdp_check_accepts_our_arguments(tmp_path, tiny_model):
    """Build the real GRPOTrainer under FSDP in one launched rank: transformers' own check
    (``Trainer.create_accelerator_and_postprocess``) runs on our arguments and accepts them, and
    refuses the same arguments with ``gradient_checkpointing`` forced on — so the check was live."""
    (rank,) = run_ranks((Path(__file__).resolve().parents[1] / "support" / "fsdp_check_worker.py"), str(tiny_model), out=tmp_path, n=1)
    assert rank["ours"] == "accepted", rank
    assert "can't be set to True simultaneously" in rank["both"], rank


def test_fsdp_with_transformers_generation_needs_no_vllm(tiny_model, tmp_path, rewards):
    overrides = fsdp_vllm.fsdp_overrides(tiny_model, generation="transformers")
    assert overrides["use_vllm"] is False and not any(key.startswith("vllm_") for key in overrides)
    args = trl_backend.trl_config(RunConfig(output_dir=str(tmp_path)), rewards, **overrides)
    assert args.use_vllm is False and args.fsdp_plugin_args["fsdp_version"] == 2
    with pytest.raises(InvalidArgumentError, match="generation must be one of"):
        fsdp_vllm.fsdp_overrides(tiny_model, generation="vllm-please")
    # The short name is the same backend; the old name still works.
    assert backends.get("fsdp") is backends.get("fsdp-vllm") is fsdp_vllm
    if ON_CPU:
        ok, why = fsdp_vllm.available(generation="transformers")
        assert not ok and "CUDA" in why and "vllm" not in why.lower().replace("fsdp-vllm", "")


@pytest.mark.skipif(not ON_CPU, reason="checks the refusal on a machine without CUDA")
def test_fsdp_with_transformers_generation_refuses_without_cuda_instead_of_falling_back(tmp_path, tiny_model):
    from rlvr_gym.trainers.train import train

    config = RunConfig(model=str(tiny_model), max_steps=1, output_dir=str(tmp_path / "run"))
    with pytest.raises(NotAvailableError, match="CUDA"):
        train("arith", config, backend="fsdp", backend_options={"generation": "transformers"})
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


@pytest.mark.parametrize("checkpointing", [True, False])
def test_deepspeed_keeps_the_runs_gradient_checkpointing(tmp_path, rewards, checkpointing):
    pytest.importorskip("deepspeed", reason="needs rlvr-gym[deepspeed]")
    from rlvr_gym.backends import deepspeed_zero2

    config = RunConfig(gradient_checkpointing=checkpointing, output_dir=str(tmp_path))
    args = trl_backend.trl_config(config, rewards, **deepspeed_zero2.training_overrides(config))
    assert args.gradient_checkpointing is checkpointing


def test_deepspeed_layers_its_trainer_through_the_shared_trainer_class_for():
    pytest.importorskip("deepspeed", reason="needs rlvr-gym[deepspeed]")
    pytest.importorskip("liger_kernel", reason="needs rlvr-gym[liger]")
    from rlvr_gym.backends import deepspeed_zero2

    # The class the trl backend builds for a ZeRO-2 run (deepspeed passes its evidence trainer as base).
    def built(config):
        return [
            c.__name__
            for c in trl_backend.trainer_class_for(config, deepspeed_zero2.evidence_trainer()).__mro__
        ]

    names = built(RunConfig(liger_loss=True))
    assert "LigerGRPOTrainer" in names and "ZeRO2Trainer" in names and "GRPOTrainer" in names
    assert "LigerGRPOTrainer" not in built(RunConfig())
    # Liger is layered once, by trainer_class_for: the base deepspeed hands the trl backend has none.
    assert names.count("LigerGRPOTrainer") == 1
    assert "LigerGRPOTrainer" not in [c.__name__ for c in deepspeed_zero2.evidence_trainer().__mro__]


def test_train_records_the_env_object_it_trains_not_the_default_id(tmp_path, tiny_model):
    from rlvr_gym.trainers.train import train

    envs.register("arith-copy-17", "rlvr_gym.envs.arith:ArithEnv")
    try:
        env = envs.make("arith-copy-17", max_operand=9)
        config = RunConfig(
            model=str(tiny_model),
            max_steps=1,
            num_generations=2,
            prompts_per_step=1,
            max_completion_length=4,
            save_steps=100,
            output_dir=str(tmp_path / "run"),
        )
        assert config.env_id is None  # named once: by the env object given to train()
        train(env, config, backend="trl")
    finally:
        envs.deregister("arith-copy-17")
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["env_id"] == "arith-copy-17" and saved["env_kwargs"]["max_operand"] == 9
    # The run also says where its optimizer state lived (the acceptance bench reads this).
    optimizer = json.loads((tmp_path / "run" / "optimizer_state.json").read_text())
    assert optimizer["state_devices"] == ["cpu"] and optimizer["state_bytes"] > 0, optimizer
    assert optimizer["state_holder"] == "AdamW", optimizer


@pytest.mark.slow
def test_only_rank_zero_writes_the_runs_shared_files(tmp_path, tiny_model):
    ranks = run_two_ranks((Path(__file__).resolve().parents[1] / "support" / "trl_ranks_worker.py"), str(tiny_model), out=tmp_path)
    assert all(rank["steps"] == 1 for rank in ranks)
    assert ranks[1]["calls"] == [], "rank 1 wrote a shared file"
    assert {"reset_metrics", "save_tokenizer", "plot_rewards"} <= set(ranks[0]["calls"])
    assert (tmp_path / "run" / "reward_curve.png").is_file()
    assert (tmp_path / "run" / "final" / "tokenizer.json").is_file()
