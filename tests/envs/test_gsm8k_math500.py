"""The gsm8k and math500 envs on the offline copies in ../shared/data (no hub access in CI)."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

from rlvr_gym import envs
from rlvr_gym.envs.data import DATA_DIR_ENV, BadDataRowError, DataUnavailableError, load_rows
from rlvr_gym.envs.gsm8k import GSM8KEnv, parse_row
from rlvr_gym.envs.math500 import MATH500Env, distinct_answers
from rlvr_gym.verifiers.math import normalize
from tests.support.timing import bound

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def gsm8k() -> GSM8KEnv:
    return envs.make("gsm8k", data_path=DATA)


@pytest.fixture(scope="module")
def math500() -> MATH500Env:
    env = envs.make("math500", data_path=DATA)
    env.rubric.components["correct"].warm_up()
    return env


def test_check_env_gsm8k(gsm8k: GSM8KEnv) -> None:
    assert envs.check_env(gsm8k, n_tasks=16) == list(envs.CHECK_NAMES)


def test_check_env_math500(math500: MATH500Env) -> None:
    assert "oracle" in envs.check_env(math500, n_tasks=16)


def test_every_gsm8k_test_reference_scores_one(gsm8k: GSM8KEnv) -> None:
    tasks = gsm8k.tasks("test")
    assert len(tasks) == 1319 and len(gsm8k.tasks("train")) == 7473
    completions = [gsm8k.reference_completion(task) for task in tasks]
    verdicts = gsm8k.verify_batch(completions, tasks)
    failures = [
        (t["answer"], v) for t, v in zip(tasks, verdicts, strict=True) if not (v.passed and v.score == 1.0)
    ]
    assert failures == []


def test_gsm8k_prompt_and_rubric_report_both_parts(gsm8k: GSM8KEnv) -> None:
    obs, info = gsm8k.reset(options={"split": "test", "index": 0})
    assert "<answer>" in obs[0]["content"] and obs[-1]["content"] == info["task"]["question"]
    verdict = gsm8k.verify("The answer is 18.", {"answer": "18", "question": "", "solution": ""})
    assert verdict.passed and verdict.score < 1.0
    assert verdict.details["reasons"] == {"correct": "correct", "format": "bad_format"}


def test_gsm8k_parse_row_strips_calculator_notes() -> None:
    task = parse_row({"question": "q", "answer": "2 * 3 = <<2*3=6>>6 and 1,000\n#### 1,006"})
    assert task == {"question": "q", "answer": "1006", "solution": "2 * 3 = 6 and 1,000"}
    with pytest.raises(ValueError):
        parse_row({"question": "q", "answer": "no final line"})


def test_math500_gold_is_equivalent_to_its_boxed_and_normalized_forms(math500: MATH500Env) -> None:
    """MATH-500: gold ≡ \\boxed{gold} ≡ its normalized forms; another problem's answer is rejected."""
    verifier = math500.rubric.components["correct"]
    tasks = math500.tasks("test")
    assert len(tasks) == 500
    for index, task in enumerate(tasks):
        gold = task["answer"]
        for form in (gold, normalize(gold), f"${gold}$", gold.replace("\\frac", "\\dfrac")):
            verdict = verifier(f"so \\boxed{{{form}}}", task)
            assert verdict.passed, (gold, form, verdict)
        other = next(
            t["answer"] for t in tasks[index + 1 :] + tasks[:index] if distinct_answers(t["answer"], gold)
        )
        assert not verifier(f"\\boxed{{{other}}}", task).passed, (gold, other)


def test_data_dir_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(DATA))
    env = envs.make("gsm8k")
    assert len(env.tasks("test")) == 1319
    assert len(envs.make("math500").tasks("test")) == 500


def test_explicit_file_path(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (DATA / "gsm8k_test.jsonl").open()][:3]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert len(GSM8KEnv(data_path=path).tasks("test")) == 3


def test_missing_local_data_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataUnavailableError, match="gsm8k_test.jsonl"):
        GSM8KEnv(data_path=tmp_path).tasks("test")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(DataUnavailableError, match=DATA_DIR_ENV):
        MATH500Env().tasks("test")
    (tmp_path / "gsm8k_test.jsonl").write_text("not json\n")
    with pytest.raises(BadDataRowError, match=":1:"):  # a malformed row: bad input, not missing data
        GSM8KEnv(data_path=tmp_path).tasks("test")


def test_hub_without_datasets_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    real_import = builtins.__import__

    def no_datasets(name: str, *args, **kwargs):
        if name == "datasets":
            raise ImportError("no datasets")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with pytest.raises(DataUnavailableError, match="pip install datasets"):
        load_rows(None, prefix="gsm8k", split="test", hub=("openai/gsm8k", "main"))


def test_math500_wrong_completions_differ(math500: MATH500Env) -> None:
    task = math500.tasks("test")[0]
    for completion in math500.wrong_completions(task):
        assert not math500.verify(completion, task).passed


def test_check_verifier_on_the_env_rubrics_and_boxed_format(gsm8k: GSM8KEnv, math500: MATH500Env) -> None:
    """The shipped rubrics and BoxedFormat survive the checker; reference completions pass."""
    from hypothesis import strategies as st

    from rlvr_gym.envs.math500 import BoxedFormat
    from rlvr_gym.verifiers.testing import check_verifier

    for env in (gsm8k, math500):
        tasks = env.tasks("test")[:20]
        task = tasks[3]
        check_verifier(
            env.rubric,
            task,
            equivalent=st.just(env.reference_completion(task)),
            different=st.sampled_from(env.wrong_completions(task)),
            time_budget=3.5,
            max_examples=15,
        )
    check_verifier(
        BoxedFormat(),
        {},
        equivalent=st.sampled_from(["\\boxed{1}", "so $\\boxed{\\frac{1}{2}}$."]),
        different=st.sampled_from(["no box", "\\boxed{", "\\boxed{}"]),
        time_budget=1.0,
        max_examples=15,
    )


@pytest.mark.parametrize("env_id", ["gsm8k", "math500"])
def test_a_ten_megabyte_completion_is_refused_by_size_at_once(env_id):
    """A size cap on gsm8k and math500 completions: without one, 10 MB spent seconds in the extractors."""
    import time

    env = envs.make(env_id)
    task = env.tasks("test")[0]
    started = time.perf_counter()
    verdict = env.verify("$" * 10_000_000, task)
    assert verdict.reason.value == "bad_format" and time.perf_counter() - started < bound(0.5)
    assert "longer than" in env.rubric.components["correct"]("$" * 10_000_000, task).details["why"]
