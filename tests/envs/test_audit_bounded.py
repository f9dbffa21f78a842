"""The audit survives a verifier that hangs: each scoring call is bounded and a hang is a finding."""

from __future__ import annotations

import threading
import time

import pytest

import rlvr_gym as rg
from rlvr_gym.envs import SingleTurnEnv
from rlvr_gym.envs import audit as audit_module
from rlvr_gym.envs.audit import audit
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import NumberMatch, Reason, Task, Verdict
from tests.support.timing import bound

_forever = threading.Event()  # never set: waiting on it is sleeping forever


def sleeps_forever(completion: str, task: Task) -> Verdict:
    _forever.wait()
    raise AssertionError("unreachable")


def hangs_on_a_megabyte(completion: str, task: Task) -> Verdict:
    """Sound on ordinary answers; hangs on the 1 MB exploits (as reasoning-gym's extractor can)."""
    if len(completion) >= 1 << 20:
        _forever.wait()
    return NumberMatch()(completion, task)


class Sums(SingleTurnEnv):
    """Two-number sums; the rubric is whatever the test hands in."""

    splits = ("test",)

    def __init__(self, rubric) -> None:
        super().__init__()
        self.rubric = rubric

    def load_tasks(self, split: str):
        return [
            {"question": f"What is {a} + {b}?", "answer": str(a + b)} for a, b in [(2, 3), (10, 7), (41, 8)]
        ]

    def question(self, task: Task) -> str:
        return task["question"]

    def reference_completion(self, task: Task) -> str:
        return f"<answer>{task['answer']}</answer>"


def test_a_verifier_that_sleeps_forever_is_a_failed_finding_not_a_hung_audit():
    started = time.perf_counter()
    report = audit(Sums(sleeps_forever), n_tasks=1, batch_timeout=0.5, item_timeout=0.2)
    assert time.perf_counter() - started < bound(5.0)
    assert not report.ok
    assert any("verifier error" in line for line in report.failures())
    gold = report.families["gold"]
    assert gold.errors == gold.count and gold.example["reason"] == "error"


def test_only_the_items_that_hang_are_findings_and_the_rest_are_scored():
    report = audit(Sums(hangs_on_a_megabyte), n_tasks=1, batch_timeout=1.0, item_timeout=0.5)
    assert report.families["gold"].ok and report.families["hedging"].ok and report.families["near_miss"].ok
    malformed = report.families["malformed"]
    assert not malformed.ok and malformed.errors >= 1
    assert malformed.example["name"] in {"one_megabyte", "one_megabyte_of_tags"}


def test_after_a_few_hangs_the_rest_is_reported_unscored(monkeypatch):
    monkeypatch.setattr(audit_module, "MAX_HUNG_ITEMS", 2)
    started = time.perf_counter()
    scored = audit_module._score(
        Sums(sleeps_forever).verify_batch,
        ["a"] * 50,
        [{"answer": "1"}] * 50,
        batch_timeout=0.2,
        item_timeout=0.1,
    )
    assert time.perf_counter() - started < bound(2.0)
    assert all(v.reason is Reason.ERROR for v, _ in scored)
    assert "not scored" in scored[-1][0].details["error"]


def test_a_prompt_verifier_is_not_slowed_and_bad_deadlines_are_refused():
    report = audit(rg.make("arith"), n_tasks=2, batch_timeout=60, item_timeout=5)
    assert report.ok
    with pytest.raises(InvalidArgumentError):
        audit(rg.make("arith"), n_tasks=1, batch_timeout=0)
