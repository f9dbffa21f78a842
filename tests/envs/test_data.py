"""Every data-file problem is one line naming the file and line; a hub id fails fast offline
and leaves no output folder behind."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from rlvr_gym import envs
from rlvr_gym.envs.data import BadDataRowError, read_jsonl
from rlvr_gym.trainers.cli import main
from tests.support.timing import bound

GOOD = {"question": "What is 1 + 1?", "answer": "1 + 1 = 2\n#### 2"}


def write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([GOOD, {"q": "1+1", "a": "2"}], ":2: missing keys 'question', 'answer' (the row has 'q', 'a')"),
        ([GOOD, GOOD, {"question": "x", "answer": "no marker"}], ":3: GSM8K row has no '#### answer' line"),
        ([GOOD, '{"question": "x"'], ":2: not JSON"),
        (["[1, 2]"], ":1: expected a JSON object per line"),
    ],
)
def test_a_bad_gsm8k_row_names_file_and_line(tmp_path, capsys, rows, expected):
    data = write(tmp_path / "gsm8k_train.jsonl", rows)
    err = one_line_error(capsys, ["check", "gsm8k", "--env-arg", f"data_path={data}"])
    assert f"{data}{expected}" in err


def test_wrong_keys_in_math500_and_humaneval_are_named(tmp_path):
    data = write(tmp_path / "math500_test.jsonl", [{"problem": "1+1", "answer": "2"}, {"problem": "2+2"}])
    with pytest.raises(BadDataRowError, match=rf"{data}:2: missing key 'answer'"):
        envs.make("math500", data_path=str(data)).tasks("test")
    data = write(tmp_path / "he.jsonl", [{"prompt": "def f():\n", "test": "", "entry_point": "f"}])
    with pytest.raises(BadDataRowError, match=rf"{data}:1: missing key 'canonical_solution'"):
        envs.make("humaneval", data_path=str(data)).tasks("test")


def test_a_truncated_gz_names_the_file_and_where_it_broke(tmp_path, capsys):
    whole = "".join(
        json.dumps(
            {
                "prompt": f"def f{i}():\n",
                "canonical_solution": "  return 1\n",
                "test": "",
                "entry_point": f"f{i}",
            }
        )
        + "\n"
        for i in range(2000)
    )
    packed = gzip.compress(whole.encode())
    cut = tmp_path / "HumanEval.jsonl.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(BadDataRowError, match=r"HumanEval\.jsonl\.gz:\d+: the gzip file is truncated or corrupt"):
        read_jsonl(cut)
    err = one_line_error(capsys, ["check", "humaneval", "--env-arg", f"data_path={cut}"])
    assert f"{cut}:" in err and "truncated" in err


def test_not_utf8_is_one_line(tmp_path):
    data = tmp_path / "gsm8k_train.jsonl"
    data.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\xfe\n")
    with pytest.raises(BadDataRowError, match=rf"{data}:2: not UTF-8"):
        read_jsonl(data)


@pytest.mark.parametrize("offline", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "http://127.0.0.1:9"}])
@pytest.mark.parametrize("command", ["eval", "train"])
def test_a_hub_model_offline_fails_fast_and_leaves_nothing(tmp_path, capsys, monkeypatch, offline, command):
    """Before: ~55 s of retries (HF_HUB_OFFLINE: ~7 s), a traceback, and the output folder left."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # an empty cache
    for key, value in offline.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "out"
    argv = [command, "--env", "arith", "--model", "someone/not-cached-model", "--output-dir", str(out)]
    started = time.perf_counter()
    err = one_line_error(
        capsys, argv + (["--limit", "1", "--n", "1"] if command == "eval" else ["--no-audit"])
    )
    assert time.perf_counter() - started < bound(10)
    assert "someone/not-cached-model" in err and ("HF_HUB_OFFLINE" in err or "unreachable" in err)
    assert not out.exists(), "a refused run left its output folder behind"


def test_plan_of_a_hub_id_without_a_route_is_one_line_in_seconds(capsys, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    from rlvr_gym.backends.planning.memory_plan import load_shape
    from rlvr_gym.error import InvalidArgumentError

    started = time.perf_counter()
    with pytest.raises(InvalidArgumentError, match="hub is unreachable"):
        load_shape("someone/not-cached-model")
    assert time.perf_counter() - started < bound(5)
    err = one_line_error(capsys, ["plan", "--model", "someone/not-cached-model", "--env", "arith"])
    assert "hub is unreachable" in err
