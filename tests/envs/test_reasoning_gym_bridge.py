"""The reasoning-gym bridge: lazy registration, seeded tasks, bounded scoring, every dataset checked."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
import warnings

import pytest

from tests.support.timing import bound

pytest.importorskip("reasoning_gym", reason="needs rlvr-gym[reasoning-gym]")

from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from rlvr_gym import envs
from rlvr_gym.envs.reasoning_gym_bridge import (
    CANNOT_CHECK,
    DATASET_NAMES,
    HARDENED_AUDIT_FAILS,
    cannot_check,
    env_id,
    extract_answer,
)
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Reason


def test_registering_all_106_imports_nothing_of_reasoning_gym():
    code = (
        "import sys; from rlvr_gym import envs\n"
        "ids = [i for i in envs.registry if i.startswith('reasoning_gym/')]\n"
        "assert len(ids) == 106, len(ids)\n"
        "assert 'reasoning_gym' not in sys.modules\n"
        "assert envs.spec('reasoning_gym/gcd').summary()\n"
        "assert 'reasoning_gym' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_pinned_names_are_the_installed_factory():
    from reasoning_gym.factory import DATASETS

    assert tuple(sorted(DATASETS)) == DATASET_NAMES


@pytest.mark.parametrize(
    "text",
    ["<answer> 42 </answer>", "<answer>1</answer> x <answer>2</answer>", "<answer>a<answer>b</answer>", "<answer>x",
     "no tags", "<answer></answer><answer>\n7\n</answer>", "</answer><answer>3</answer></answer>"],
)  # fmt: skip
def test_our_extractor_takes_what_reasoning_gym_takes(text):
    from reasoning_gym.utils import extract_answer as theirs

    assert extract_answer(text) == theirs(text)


def test_our_extractor_is_linear_on_a_megabyte_of_tags():
    hostile = "<answer>" * (1 << 17) + "x" + "</answer" * 1000
    started = time.perf_counter()
    assert extract_answer(hostile) is None
    assert time.perf_counter() - started < bound(0.5)


@pytest.fixture(scope="module")
def gcd():
    env = envs.make("reasoning_gym/gcd", train_size=20, test_size=5)
    yield env
    env.close()


def test_two_instances_pose_the_same_tasks_and_splits_do_not_overlap(gcd):
    other = envs.make("reasoning_gym/gcd", train_size=20, test_size=5)
    assert list(gcd.tasks("train")) == list(other.tasks("train"))
    assert {t["index"] for t in gcd.tasks("train")}.isdisjoint({t["index"] for t in gcd.tasks("test")})
    assert list(envs.make("reasoning_gym/gcd", seed=1, train_size=20, test_size=5).tasks("train")) != list(
        gcd.tasks("train")
    )


def test_a_task_is_generated_once_per_instance_and_a_pickled_copy_makes_its_own(gcd, monkeypatch):
    """Some generators take a second a puzzle; reset(seed) and the checker ask for one index often."""
    from rlvr_gym.envs.reasoning_gym_bridge import ReasoningGymScore

    made = []
    generate = ReasoningGymScore.row
    monkeypatch.setattr(ReasoningGymScore, "row", lambda score, i: made.append(i) or generate(score, i))
    env = envs.make("reasoning_gym/gcd", train_size=20, test_size=5)
    first = env.reset(seed=3)[1]["task"]
    assert env.reset(seed=3)[1]["task"] == first and env.tasks("train")[first["index"]] == first
    assert made == [first["index"]]
    assert env.row("train", first["index"]) is not env.row("train", first["index"])  # callers get copies
    copied = pickle.loads(pickle.dumps(env))
    assert copied.tasks("train")[first["index"]] == first and made == [first["index"]] * 2  # its own, equal


HASH_SEEDED = [
    "polynomial_multiplication",
    "word_ladder",
    "ransom_note",
    "isomorphic_strings",
    "list_functions",
]
"""Generators that walk a set of symbols or strings: in-process, their entry i followed the hash seed
(knight_swap too, left out here: seconds a puzzle); list_functions drew from the process's ``random``."""


def test_tasks_are_the_same_in_every_run_and_the_gold_posed_is_the_gold_scored():
    """The scoring worker regenerated entry i under its own hash seed: polynomial_multiplication's gold
    there was another polynomial, so its own gold failed in about half the runs (CI saw both);
    list_functions' entry i changed with every call."""
    code = (
        "import json, sys\n"
        "from rlvr_gym import envs\n"
        "out = {}\n"
        f"for name in {HASH_SEEDED!r}:\n"
        "    env = envs.make('reasoning_gym/' + name, train_size=2, test_size=1)\n"
        "    tasks = list(env.tasks('train'))\n"
        "    scores = [env.verify('<answer>' + t['answer'] + '</answer>', t).score for t in tasks]\n"
        "    out[name] = [[t['question'], t['answer']] for t in tasks], scores\n"
        "    env.close()\n"
        "print(json.dumps(out))\n"
    )
    started = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for hash_seed in ("1", "2")
    ]
    runs = []
    for process in started:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
        runs.append(json.loads(out.strip().splitlines()[-1]))
    for name in HASH_SEEDED:
        assert runs[0][name][0] == runs[1][name][0], name  # the same tasks under another hash seed
        assert runs[0][name][1] == runs[1][name][1] == [1.0, 1.0], name  # each gold scores 1.0


def test_knobs_are_env_kwargs_and_unknown_knobs_are_clear_errors():
    env = envs.make("reasoning_gym/countdown", min_numbers=3, max_numbers=3, train_size=5, test_size=1)
    assert env.config == {"min_numbers": 3, "max_numbers": 3}
    assert all(len(env.dataset[t["index"]]["metadata"]["numbers"]) == 3 for t in env.tasks("train"))
    with pytest.raises(InvalidArgumentError, match="no knob"):
        envs.make("reasoning_gym/countdown", min_numbrs=3)
    with pytest.raises(InvalidArgumentError, match="bad knobs"):
        envs.make("reasoning_gym/countdown", min_numbers=9, max_numbers=3)


def test_hostile_completions_get_verdicts_fast(gcd):
    task = gcd.tasks("test")[0]
    for hostile, reason in [
        ("<answer>" * 20_000, Reason.NO_ANSWER),  # 160 kB of tags: read by our linear extractor
        ("<answer>" * (1 << 17), Reason.BAD_FORMAT),  # 1 MB: over the size cap, not even read
        ("9" * (1 << 20), Reason.BAD_FORMAT),
        ("<answer>" + "1" * 50_000 + "</answer>", Reason.BAD_FORMAT),
    ]:
        started = time.perf_counter()
        assert gcd.verify(hostile, task).reason is reason
        assert time.perf_counter() - started < bound(2.0)


def test_an_answer_that_hangs_reasoning_gyms_own_scorer_is_a_timeout_verdict():
    """simple_integration's score_answer hands the answer to sympy: 9**9**9**9 never finishes."""
    env = envs.make("reasoning_gym/simple_integration", train_size=2, test_size=1, score_timeout=1.0)
    try:
        task = env.tasks("train")[0]
        started = time.perf_counter()
        assert env.verify("<answer>9**9**9**9</answer>", task).reason is Reason.TIMEOUT
        assert time.perf_counter() - started < bound(30)  # 1 s of scoring; the rest is the worker's restart
        assert env.verify(env.reference_completion(task), task).passed  # a fresh worker scores on
    finally:
        env.close()


def test_the_hardened_scoring_refuses_hedges_and_partial_credit():
    own = envs.make("reasoning_gym/gcd", train_size=2, test_size=1)
    hard = envs.make("reasoning_gym/gcd", train_size=2, test_size=1, hardened=True)
    try:
        task = own.tasks("train")[0]
        gold, wrong = task["answer"], str(int(task["answer"]) + 1)
        hedge = f"<answer>{wrong}</answer>\n<answer>{gold}</answer>"
        assert own.verify(hedge, task).passed and not hard.verify(hedge, task).passed
        contains = f"<answer>{gold}0</answer>"  # reasoning-gym's default: len(gold)/len(answer)
        assert own.verify(contains, task).score == 0.5 and hard.verify(contains, task).score == 0.0
        assert hard.verify(own.reference_completion(task), task).passed
    finally:
        own.close()
        hard.close()


def _scores(env_id_: str, index: int, answers: dict[str, str], **knobs: object) -> dict[str, float]:
    env = envs.make(env_id_, train_size=4, test_size=1, **knobs)
    try:
        task = env.tasks("train")[index]
        return {
            name: env.verify(f"<answer>{text.format(gold=task['answer'])}</answer>", task).score
            for name, text in answers.items()
        }
    finally:
        env.close()


@pytest.mark.parametrize(
    ("dataset", "index", "wrong"),
    [
        ("number_sorting", 1, "['53.2', '30.0', '14.0', '-49.0', '-81.0']"),  # first item off by one
        ("game_of_life_halting", 1, "True"),  # the opposite bool (the gold is False)
        ("coin_flip", 0, "10"),  # gold 1, times ten
        ("gcd", 1, "-{gold}"),  # the sign flipped
        ("gcd", 1, "{gold} or 9"),  # two answers in one tag
    ],
)
def test_hardened_judges_numbers_bools_and_lists_itself(dataset, index, wrong):
    """hardened=True pays none of these, which reasoning-gym's lenient scorers paid."""
    hard = _scores(
        env_id(dataset), index, {"gold": "{gold}", "wrong": wrong, "point_zero": "{gold}"}, hardened=True
    )
    assert hard["gold"] == 1.0 and hard["wrong"] == 0.0


def test_hardened_accepts_renderings_of_the_same_value():
    hard = _scores(
        env_id("gcd"),
        1,
        {"point_zero": "{gold}.0", "dollars": "${gold}$", "bold": "**{gold}**"},
        hardened=True,
    )
    assert set(hard.values()) == {1.0}
    bools = _scores(env_id("game_of_life_halting"), 0, {"lower": "true", "yes": "Yes"}, hardened=True)
    assert set(bools.values()) == {1.0}


def test_hardened_refuses_the_datasets_it_cannot_check_and_checks_game_of_life_halting():
    with pytest.raises(InvalidArgumentError, match="cannot be checked, so hardened=True refuses it"):
        envs.make(env_id("boxnet"), hardened=True)
    with pytest.raises(InvalidArgumentError, match="exploits still get reasoning-gym's full marks"):
        envs.make(env_id("spell_backward"), hardened=True)
    assert set(cannot_check(hardened=True)) == (set(CANNOT_CHECK) - {"game_of_life_halting"}) | set(
        HARDENED_AUDIT_FAILS
    )
    env = envs.make(env_id("game_of_life_halting"), hardened=True, train_size=6, test_size=2)
    try:
        assert envs.check_env(env, n_tasks=2) == list(envs.CHECK_NAMES)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["game_of_life_halting", "number_sorting", "coin_flip"])
def test_hardened_scoring_passes_the_audit_where_reasoning_gyms_own_did_not(dataset):
    """The audit catches what paid 1.0 hardened: the opposite bool, a list off by one, a near-miss probability."""
    from rlvr_gym.envs.audit import audit

    env = envs.make(env_id(dataset), hardened=True, train_size=60, test_size=8)
    try:
        report = audit(env, n_tasks=3)
    finally:
        env.close()
    assert report.ok, report.render()


@pytest.mark.slow
def test_every_bridged_env_passes_check_env_and_gymnasiums_checker_or_is_listed():
    keeper = envs.make("reasoning_gym/gcd")  # keeps the scoring worker warm across the loop
    keeper.verify("<answer>1</answer>", keeper.tasks("train")[0])
    failed = {}
    try:
        for name in DATASET_NAMES:
            try:
                env = envs.make(env_id(name))
                envs.check_env(env, n_tasks=2)
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    gymnasium_check_env(env)
                env.close()
            except Exception as exc:  # noqa: BLE001 - collected, compared with the list below
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        keeper.close()
    assert set(failed) == set(CANNOT_CHECK), failed
