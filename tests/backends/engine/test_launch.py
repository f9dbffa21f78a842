"""Running here or launching ranks (``backends/engine/launch.py``): one helper for both
distributed backends, and a real two-rank launch read back from its run folder."""

from __future__ import annotations

import json

import pytest

from rlvr_gym import envs
from rlvr_gym.backends.config import RunConfig


def test_both_distributed_backends_run_here_or_launch_through_one_helper():
    from rlvr_gym.backends import deepspeed_zero2, fsdp_vllm
    from rlvr_gym.backends.engine import launch

    assert deepspeed_zero2.run_or_launch is fsdp_vllm.run_or_launch is launch.run_or_launch
    assert deepspeed_zero2.worker_main is fsdp_vllm.worker_main is launch.worker_main


@pytest.mark.slow
def test_run_or_launch_starts_the_ranks_and_reads_back_their_run(tmp_path):
    """A real torchrun of two ranks running a worker module, then the run read from its folder."""
    pytest.importorskip("torch", reason="needs rlvr-gym[trl]")
    from rlvr_gym.backends.engine.launch import LaunchSpec, run_or_launch
    from tests.support.torchrun import free_port

    config = RunConfig(output_dir=str(tmp_path / "run"))
    spec = LaunchSpec(num_processes=2, main_process_port=free_port())
    result = run_or_launch(
        None,
        "tests.support.launch_worker",
        spec,
        in_process=False,
        env=envs.make("arith"),
        config=config,
        model="m",
        resume=False,
        overrides={"seen": True},
    )
    assert result.steps == 3 and result.metrics[0]["step"] == 2
    ranks = [json.loads((tmp_path / "run" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1] == {"env": "arith-v0", "model": "m", "seen": True}
    assert not list((tmp_path / "run" / "launch").iterdir()), "the job file was left behind"
