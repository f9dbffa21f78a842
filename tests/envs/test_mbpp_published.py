"""MBPP as Google publishes it: one ``mbpp.jsonl`` (or ``sanitized-mbpp.json``) split by task id."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from rlvr_gym import envs
from rlvr_gym.envs.audit import audit
from rlvr_gym.envs.code_env import fenced
from rlvr_gym.envs.mbpp import SPLITS

DATA = Path(os.environ.get("RLVR_GYM_DATA_DIR", "")) / "mbpp.jsonl"
pytestmark = pytest.mark.skipif(not DATA.is_file(), reason="no offline copy of Google's mbpp.jsonl")


@pytest.fixture(scope="module")
def mbpp():
    env = envs.make("mbpp")
    yield env
    env.close()


def test_the_papers_split_by_task_id(mbpp):
    sizes = {split: len(mbpp.tasks(split)) for split in mbpp.splits}
    assert sizes == {"train": 374, "test": 500, "validation": 90, "prompt": 10}
    for split, ids in SPLITS.items():
        assert {t["task_id"] for t in mbpp.tasks(split)} == set(ids)


def test_a_data_path_to_googles_file_splits_it_the_same_way(mbpp):
    mine = envs.make("mbpp", data_path=str(DATA))
    assert [t["task_id"] for t in mine.tasks("validation")] == [
        t["task_id"] for t in mbpp.tasks("validation")
    ]


def test_setup_code_and_challenge_tests(mbpp):
    task = next(t for t in mbpp.tasks("test") if t["task_id"] == 11)
    assert len(task["tests"]["cases"]) == 3  # the paper's test_list
    hard = envs.make("mbpp", challenge_tests=True)
    task = next(t for t in hard.tasks("test") if t["task_id"] == 11)
    assert list(task["tests"]["cases"][3:]) == list(task["challenge_test_list"])
    assert hard.verify(hard.reference_completion(task), task).passed
    with_setup = [t for t in mbpp.tasks("test") if t["test_setup_code"]]
    assert with_setup and all(t["tests"]["setup"] == t["test_setup_code"] for t in with_setup)


def test_sanitized_mbpp_reads_prompt_and_test_imports():
    env = envs.make("mbpp", sanitized=True)
    rows = json.loads((DATA.parent / "sanitized-mbpp.json").read_text())
    expected = Counter(next(s for s, ids in SPLITS.items() if r["task_id"] in ids) for r in rows)
    assert {s: len(env.tasks(s)) for s in env.splits} == dict(expected)
    assert sum(expected.values()) == 427
    task = next(t for t in env.tasks("test") if t["test_imports"])
    assert task["text"] == task["prompt"] and task["tests"]["setup"] == "\n".join(task["test_imports"])
    assert env.verify(env.reference_completion(task), task).passed
    env.close()


@pytest.mark.slow
def test_mbpp_passes_gymnasium_the_audit_and_check_env(mbpp):
    """Task 601, the first of train, builds the submission's own ``Pair`` objects: ``check_env``'s
    oracle passes on it."""
    gymnasium_check_env(mbpp, skip_render_check=True)
    report = audit(mbpp, n_tasks=3)
    assert report.ok, report.render()
    assert envs.check_env(mbpp, n_tasks=3) == list(envs.CHECK_NAMES)


def test_tasks_that_pass_the_submissions_own_objects_or_a_type_back_to_it(mbpp):
    """The published tasks that need the harness's care: 601 (``Pair`` objects in the asserts),
    367 and 927 (a ``test_setup_code`` that grows ``Node`` trees), 533 (the type ``int`` as an argument), and 341 (a set literal whose
    request must match its planned frame): canonical solutions pass, and one that returns an
    always-equal object passes none of their cases."""
    wanted = {601, 367, 927, 533, 341}
    tasks = [t for split in mbpp.splits for t in mbpp.tasks(split) if t["task_id"] in wanted]
    assert len(tasks) == len(wanted)
    verdicts = mbpp.verify_batch([mbpp.reference_completion(t) for t in tasks], tasks)
    assert all(v.passed for v in verdicts), verdicts
    liar = "class Yes:\n    def __eq__(self, other):\n        return True\n"
    forged = [
        fenced(f"{t['code']}\n{liar}def {t['tests']['entry_point']}(*args):\n    return Yes()\n")
        for t in tasks
    ]
    assert [v.score for v in mbpp.verify_batch(forged, tasks)] == [0.0] * len(tasks)


def test_a_counter_crosses_the_sandbox_as_the_dict_it_equals(mbpp):
    """MBPP task 40's canonical solution returns a ``Counter``; its tests compare it with a dict."""
    from collections import Counter

    from rlvr_gym.verifiers.code.codec import CodecError, dumps, encode_value, loads

    assert loads(dumps(encode_value(Counter("abca")))) == {"a": 2, "b": 1, "c": 1}

    class Sly(Counter):
        def __eq__(self, other):
            return True

    with pytest.raises(CodecError):
        encode_value(Sly("a"))
    task = next(t for t in mbpp.tasks("test") if t["task_id"] == 40)
    assert mbpp.verify(mbpp.reference_completion(task), task).passed
