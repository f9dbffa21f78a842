"""Your own data, no class: ``math``, ``code`` and ``instructions`` envs by column mapping."""

from __future__ import annotations

import csv
import json

import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from rlvr_gym import envs
from rlvr_gym.envs.audit import audit
from rlvr_gym.envs.data import BadDataRowError, DataUnavailableError
from rlvr_gym.trainers.cli import main

PROBLEMS = [
    {"problem": "What is 2 + 3?", "answer": "5"},
    {"problem": "Simplify 6/8.", "answer": "\\frac{3}{4}"},
    {"problem": "Solve x^2 = 9 for x > 0.", "answer": 3},
    {"problem": "How many sides has a hexagon?", "answer": "#### 6"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def problems(tmp_path):
    return write_jsonl(tmp_path / "my.jsonl", PROBLEMS)


def test_a_users_jsonl_of_math_problems_passes_check_env_gymnasium_and_the_audit(problems):
    env = envs.make("math", data=problems, question="problem", answer="answer")
    assert [t["answer"] for t in env.tasks("train")] == ["5", "\\frac{3}{4}", "3", "6"]
    assert envs.check_env(env) == list(envs.CHECK_NAMES)
    gymnasium_check_env(env, skip_render_check=True)
    report = audit(env)
    assert report.ok, report.render()
    task = env.tasks("train")[1]
    assert env.verify("so it is \\boxed{0.75}", task).passed
    assert not env.verify("\\boxed{3/5}", task).passed


@pytest.mark.parametrize("fmt", ["json", "csv", "parquet"])
def test_json_csv_and_parquet_give_the_same_tasks(tmp_path, problems, fmt):
    rows = [{**r, "answer": str(r["answer"])} for r in PROBLEMS]
    path = tmp_path / f"my.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(rows))
    elif fmt == "csv":
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["problem", "answer"])
            writer.writeheader()
            writer.writerows(rows)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    mine = envs.make("math", data=str(path), question="problem", answer="answer").tasks("train")
    assert mine == envs.make("math", data=problems, question="problem", answer="answer").tasks("train")


def test_a_bad_row_is_its_file_line_and_the_missing_key(tmp_path):
    path = write_jsonl(tmp_path / "my.jsonl", [PROBLEMS[0], {"problem": "No answer here."}])
    with pytest.raises(BadDataRowError, match=rf"{path}:2: missing key 'answer'"):
        envs.make("math", data=path, question="problem", answer="answer").tasks("train")
    csv_path = tmp_path / "my.csv"
    csv_path.write_text("problem,answer\nWhat is 1+1?,2\nEmpty?,\n")
    with pytest.raises(BadDataRowError, match=rf"{csv_path}:3: column 'answer' must be non-empty"):
        envs.make("math", data=str(csv_path), question="problem", answer="answer").tasks("train")
    with pytest.raises(DataUnavailableError, match="pass data="):
        envs.make("math")
    with pytest.raises(DataUnavailableError, match="no data file"):
        envs.make("math", data=str(tmp_path / "missing.jsonl")).tasks("train")


@pytest.mark.slow
def test_a_hub_id_goes_through_datasets(monkeypatch):
    """``org/name`` is a hub dataset; offline (only the local cache, nothing there) a clear error."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataUnavailableError, match="could not load 'nobody-here/no-such-set' split 'test'"):
        envs.make("math", data="nobody-here/no-such-set", split="test").tasks("test")


CODE = [
    {
        "prompt": "Write add(a, b) returning the sum.",
        "tests": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
        "solution": "def add(a, b):\n    return a + b",
    },
    {
        "prompt": "Write twice(s) repeating a string.",
        "tests": ["assert twice('ab') == 'abab'"],
        "solution": "def twice(s):\n    return s * 2",
    },
]


def test_code_from_asserts_calls_and_stdio(tmp_path):
    path = write_jsonl(tmp_path / "code.jsonl", CODE)
    env = envs.make("code", data=path, solution="solution")
    assert envs.check_env(env, n_tasks=2) == list(envs.CHECK_NAMES)
    assert audit(env, n_tasks=2).ok
    calls = write_jsonl(
        tmp_path / "calls.jsonl",
        [
            {
                "q": "Square it.",
                "fn": "sq",
                "cases": [{"args": [3], "expected": 9}],
                "code": "def sq(x):\n    return x * x",
            }
        ],
    )
    env = envs.make(
        "code", data=calls, prompt="q", tests="cases", kind="calls", entry_point="fn", solution="code"
    )
    task = env.tasks("train")[0]
    assert env.verify(env.reference_completion(task), task).passed
    assert not env.verify("```python\ndef sq(x):\n    return x + x\n```", task).passed
    stdio = write_jsonl(
        tmp_path / "stdio.jsonl",
        [
            {
                "prompt": "Echo twice.",
                "tests": [{"stdin": "hi\n", "stdout": "hihi\n"}],
                "code": "print(input() * 2)",
            }
        ],
    )
    env = envs.make("code", data=stdio, kind="stdio", solution="code")
    task = env.tasks("train")[0]
    assert env.verify(env.reference_completion(task), task).passed
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "p", "tests": []}])
    with pytest.raises(BadDataRowError, match=rf"{bad}:1: column 'tests' must be a non-empty list"):
        envs.make("code", data=bad).tasks("train")


def test_the_cli_takes_the_data_and_columns_as_env_args(problems, capsys):
    args = ["--env-arg", f"data={problems}", "--env-arg", "question=problem"]
    assert main(["check", "math", "--n-tasks", "2", *args]) == 0
    assert main(["audit", "math", "--n-tasks", "2", *args]) == 0
    assert "PASS" in capsys.readouterr().out
