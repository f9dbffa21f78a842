"""The memory path and Liger's loss run the decoder and read the LM head's weight without calling
the model or the head. Under FSDP2 that weight can still be a sharded DTensor (``backends/engine/head.py``
gathers it), and the root's hooks must still fire (``backends/engine/forward.py``). Real FSDP2
(``fully_shard``, torch 2.13) on two gloo ranks: the log-probs and every gradient must equal the
unsharded model's."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the memory path needs rlvr-gym[trl]")

from tests.support.torchrun import run_two_ranks

WORKER = (Path(__file__).resolve().parents[2] / "support" / "fsdp_head_worker.py")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    """One two-rank launch runs every plan and path (a launch costs more than the work)."""
    return run_two_ranks(WORKER, out=tmp_path_factory.mktemp("fsdp_head"))


def check(ranks: list[dict], key: str) -> None:
    for records in ranks:
        record = records[key]
        assert record["error"] is None, record.get("traceback")
        assert record["missing_grads"] == []
        assert record.get("no_grad_max_diff", 0.0) < 1e-5
        assert record["value_max_diff"] < 1e-5
        worst = max(record["grad_max_diff"].items(), key=lambda item: item[1])
        assert worst[1] < 1e-5, worst


@pytest.mark.slow
def test_a_head_that_is_its_own_fsdp2_unit_is_gathered_before_use(ranks):
    check(ranks, "own-units/logps")
    assert all(r["own-units/logps"]["head_sharded_at_use"] for r in ranks)  # the case the guard is for


@pytest.mark.slow
def test_accelerates_tied_tail_group_gives_the_unsharded_logps_and_gradients(ranks):
    check(ranks, "accelerate/logps")


@pytest.mark.slow
@pytest.mark.parametrize("plan", ["own-units", "accelerate"])
def test_ligers_loss_under_fsdp2_gives_the_unsharded_loss_and_gradients(ranks, plan):
    pytest.importorskip("liger_kernel", reason="needs rlvr-gym[liger]")
    check(ranks, f"{plan}/liger")
