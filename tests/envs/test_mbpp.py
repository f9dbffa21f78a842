"""The MBPP-style env: hub schema rows, our own call and stdio kinds, offline sources."""

from __future__ import annotations

import json

import pytest

from rlvr_gym import envs
from rlvr_gym.envs.data import DataUnavailableError
from rlvr_gym.envs.mbpp import FIXTURE_PATH, MbppEnv, mbpp_tests


@pytest.fixture(scope="module")
def env():
    return envs.make("mbpp-sample")  # with a spec: the rebuild rules run too


def test_fixture_covers_every_test_kind_in_both_splits(env):
    kinds = {split: {t["tests"]["kind"] for t in env.tasks(split)} for split in env.splits}
    assert kinds == {"train": {"assert", "calls", "stdio"}, "test": {"assert", "calls", "stdio"}}


def test_check_env_passes_on_the_fixture(env):
    assert envs.check_env(env, n_tasks=6) == list(envs.CHECK_NAMES)


def test_hub_rows_become_assert_tests_with_their_entry_point():
    row = {
        "text": "t",
        "code": "import re\ndef helper(x):\n    return x\ndef remove_Occ(s, c):\n    return s",
        "test_list": ['assert remove_Occ("hello","l") == "heo"'],
        "test_setup_code": "",
    }
    spec = mbpp_tests(row)
    assert spec == {"kind": "assert", "setup": "", "cases": row["test_list"], "entry_point": "remove_Occ"}


def test_partial_credit_and_prompts(env):
    task = next(t for t in env.tasks("test") if t["tests"]["kind"] == "assert")
    question = env.prompt(task)[-1]["content"]
    assert task["test_list"][0] in question and "```python" in question
    half = "```python\ndef remove_Occ(s, ch):\n    return 'heo'\n```"
    verdict = env.verify(half, task)
    assert not verdict.passed and 0 < verdict.score < 1


def test_mbpp_never_stands_in_the_fixture_for_mbpp(monkeypatch, tmp_path):
    monkeypatch.setenv("RLVR_GYM_DATA_DIR", str(tmp_path))  # a data folder without MBPP
    with pytest.raises(DataUnavailableError, match="mbpp-sample-v0"):
        envs.make("mbpp").tasks("test")
    sample = envs.make("mbpp-sample")
    assert sample.tasks("test") == MbppEnv(data_path=FIXTURE_PATH).tasks("test")
    assert len(sample.tasks("train")) + len(sample.tasks("test")) == 12
    assert "not MBPP" in envs.spec("mbpp-sample").summary()


def test_data_dir_with_mbpp_files_is_used(monkeypatch, tmp_path):
    row = {
        "task_id": 1,
        "text": "Return one.",
        "code": "def one():\n    return 1",
        "test_list": ["assert one() == 1"],
    }
    (tmp_path / "mbpp_train.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "mbpp_test.jsonl").write_text(json.dumps({**row, "task_id": 2}) + "\n")
    monkeypatch.setenv("RLVR_GYM_DATA_DIR", str(tmp_path))
    env = envs.make("mbpp")
    assert [t["task_id"] for t in env.tasks("test")] == [2]
    assert env.verify(env.reference_completion(env.tasks("train")[0]), env.tasks("train")[0]).passed
    assert [t["task_id"] for t in MbppEnv(data_path=tmp_path).tasks("train")] == [1]


def test_verify_batch_agrees_with_verify_on_odd_completions(env):
    task = env.tasks("train")[0]
    completions = [
        None,
        12345,
        [{"role": "assistant", "content": env.reference_completion(task)}],
        "no code",
        env.reference_completion(task),
    ]
    assert env.verify_batch(completions, [task] * len(completions)) == [
        env.verify(c, task) for c in completions
    ]
