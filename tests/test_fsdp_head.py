"""The memory path runs the decoder and reads the LM head's weight without calling the model or
the head. Under FSDP2 that weight can still be a sharded DTensor (``backends/engine/head.py``
gathers it), and the root's hooks must still fire (``backends/engine/forward.py``). Real FSDP2
(``fully_shard``, torch 2.13) on two gloo ranks: the log-probs and every gradient must equal the
unsharded model's."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the memory path needs rlvr-gym[trl]")

from tests.torchrun_support import run_two_ranks

WORKER = Path(__file__).with_name("fsdp_head_worker.py")


def check(ranks: list[dict]) -> None:
    for rank in ranks:
        assert rank["error"] is None, rank.get("traceback")
        assert rank["missing_grads"] == []
        assert rank["no_grad_logp_max_diff"] < 1e-5
        assert rank["logp_max_diff"] < 1e-5
        worst = max(rank["grad_max_diff"].items(), key=lambda item: item[1])
        assert worst[1] < 1e-5, worst


@pytest.mark.slow
def test_a_head_that_is_its_own_fsdp2_unit_is_gathered_before_use(tmp_path):
    ranks = run_two_ranks(WORKER, "own-units", out=tmp_path)
    assert all(rank.get("head_sharded_at_use") for rank in ranks if rank["error"] is None)
    check(ranks)


@pytest.mark.slow
def test_accelerates_tied_tail_group_gives_the_unsharded_logps_and_gradients(tmp_path):
    check(run_two_ranks(WORKER, "accelerate", out=tmp_path))
