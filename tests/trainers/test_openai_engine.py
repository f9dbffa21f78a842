"""``rlvr-gym eval --engine openai``: sampling from an OpenAI-compatible server on 127.0.0.1.

Two real servers: ``transformers serve`` with the tiny model (the same scoring, logs, resume and
pass@k as a local eval), and a small stdlib HTTP server that answers 429 and 500 before it
answers (the client's retries and rate-limit handling), or never answers well (one line).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.timing import bound

pytest.importorskip("openai", reason="the openai engine needs rlvr-gym[openai]")

from rlvr_gym import envs
from rlvr_gym.error import InvalidArgumentError, RunFailedError
from rlvr_gym.trainers.cli import main
from rlvr_gym.trainers.evaluate import evaluate
from rlvr_gym.trainers.openai_engine import OpenAISampler


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scripted(BaseHTTPRequestHandler):
    """Chat completions that fail with the statuses in ``server.script`` first, then answer
    ``server.reply`` (``<answer>5</answer>``; n choices when asked for n)."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server = self.server
        with server.lock:
            server.requests.append({"path": self.path, "body": body})
            status = server.script.pop(0) if server.script else (server.always or 200)
        if status != 200:
            payload = json.dumps({"error": {"message": f"scripted {status}", "type": "x"}}).encode()
            self.send_response(status)
            self.send_header("retry-after-ms", "20")  # the client honours it (a 429's usual header)
        else:
            choices = [
                {
                    "index": i,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": server.reply},
                }
                for i in range(body.get("n", 1))
            ]
            payload = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": choices,
                }
            ).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.lock = threading.Lock()
    server.requests, server.script, server.always = [], [], None
    server.reply = "<answer>5</answer>"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_429_and_500_are_retried_and_the_eval_completes(scripted, tmp_path):
    """The first request meets a rate limit and a server error, then succeeds: nothing is lost."""
    scripted.script = [429, 500]
    env = envs.make("arith", num_steps=1, max_operand=2, operations="+", word_problems=False)
    sampler = OpenAISampler(url(scripted), "served-model", max_retries=3, temperature=1.0, max_new_tokens=8)
    result = evaluate(
        env, "served-model", n=3, k=[1, 3], limit=4, output_dir=tmp_path, sampler=sampler, progress=False
    )
    assert len(scripted.requests) == 2 + 4, "one request per task (n=3 in one), plus the two failed attempts"
    first = scripted.requests[0]["body"]
    assert (
        first["n"] == 3
        and first["max_tokens"] == 8
        and first["temperature"] == 1.0
        and first["model"] == "served-model"
    )
    assert first["messages"] == env.prompt(env.tasks("test")[0])
    assert result.summary["engine"] == "openai" and result.summary["rollouts"] == 12
    tasks = env.tasks("test")
    assert result.summary["accuracy"] == sum(t["answer"] == "5" for t in tasks[:4]) / 4
    assert {"pass@1", "pass@3"} == set(result.summary["pass@k"])


def test_a_server_that_keeps_rate_limiting_is_one_line_and_the_eval_resumes(scripted, tmp_path, capsys):
    scripted.script = [200, 200]  # two tasks go through, then the server only says 429
    scripted.always = 429
    argv = ["eval", "--engine", "openai", "--base-url", url(scripted), "--model", "m", "--env", "arith"]
    argv += ["--n", "2", "--limit", "5", "--max-retries", "2", "--output-dir", str(tmp_path), "--no-progress"]
    started = time.perf_counter()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "HTTP 429" in err and "rate limited" in err, err
    assert time.perf_counter() - started < bound(30)
    assert len(scripted.requests) == 2 + 3, "the third task's request was tried 1 + 2 retries times"
    # The eval logs rollouts a chunk at a time: resuming after the server recovers loses nothing.
    scripted.always = None
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "5 tasks x 2 samples (openai)" in out and "env settings: {" in out


def test_a_server_that_refuses_n_gets_one_request_per_sample_each_with_its_own_seed(scripted, tmp_path):
    scripted.script = [400]  # the answer to the first request, which asks for n
    sampler = OpenAISampler(url(scripted), "m", max_retries=0)
    texts = sampler.sample("What is 2 + 3?", 3, seed=7)
    assert texts == ["<answer>5</answer>"] * 3 and sampler.takes_n is False
    later = [r["body"] for r in scripted.requests[1:]]
    assert all("n" not in b for b in later) and sorted(b["seed"] for b in later) == [7, 8, 9]


def test_bad_settings_and_a_missing_server_are_one_line(tmp_path, capsys):
    with pytest.raises(InvalidArgumentError, match="http"):
        OpenAISampler("127.0.0.1:8000", "m")
    port = free_port()  # nothing listens there
    sampler = OpenAISampler(f"http://127.0.0.1:{port}/v1", "m", max_retries=0, timeout_s=5)
    with pytest.raises(RunFailedError, match="cannot reach"):
        sampler.sample("hi", 1, seed=0)
    assert main(["eval", "--engine", "openai", "--model", "m", "--env", "arith"]) == 2
    assert "--base-url" in capsys.readouterr().err


@pytest.fixture(scope="module")
def servable_model(warm_arith_model, tmp_path_factory):
    """A copy of the warm tiny model with the response template a server needs (the shared
    model stays as training uses it)."""
    import shutil

    from rlvr_gym.trainers.tiny_model import make_servable

    copy = tmp_path_factory.mktemp("served") / "warm"
    shutil.copytree(warm_arith_model, copy)
    return make_servable(copy)


@pytest.fixture(scope="module")
def served_tiny_model(servable_model):
    """``transformers serve`` (needs rlvr-gym[serve]) serving the warm tiny model on 127.0.0.1."""
    binary = Path(sys.executable).with_name("transformers")
    if not binary.exists():
        pytest.skip("no transformers CLI beside this Python")
    pytest.importorskip("fastapi", reason="transformers serve needs rlvr-gym[serve]")
    pytest.importorskip("uvicorn", reason="transformers serve needs rlvr-gym[serve]")
    pytest.importorskip("requests", reason="the transformers CLI needs rlvr-gym[serve]")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [str(binary), "serve", str(servable_model), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(
        command + ["--device", "cpu"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"transformers serve did not start: {process.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
    yield f"http://127.0.0.1:{port}/v1"
    process.terminate()
    process.wait(timeout=30)


@pytest.mark.slow
def test_eval_against_transformers_serve_scores_logs_and_resumes_like_a_local_eval(
    served_tiny_model, servable_model, tmp_path, capsys
):
    model = str(servable_model)
    argv = ["eval", "--engine", "openai", "--base-url", served_tiny_model, "--model", model, "--env", "arith"]
    argv += [
        "--n",
        "2",
        "--limit",
        "3",
        "--max-new-tokens",
        "8",
        "--output-dir",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "3 tasks x 2 samples (openai)" in out and "pass@2" in out
    rows = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["completion"] is not None for r in rows)
    env = envs.make("arith")
    tasks = env.tasks("test")
    for row in rows:  # the same scoring as a local eval: the env's own verdict of the served text
        assert env.verify(row["completion"], tasks[row["index"]]).to_dict() == row["verdict"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["engine"] == "openai" and summary["rollouts"] == 6

    assert main(argv) == 0  # resumed: nothing sampled or scored again
    assert "scored 0 rollouts this run, resumed 6" in capsys.readouterr().out


@pytest.mark.slow
def test_local_and_served_eval_of_one_model_agree_within_sampling_noise(
    served_tiny_model, servable_model, warm_arith_model, tmp_path
):
    """Before: transformers serve parsed the tiny model's replies with Qwen2's ChatML template and
    returned the rendered prompt as each completion (its system prompt's <answer>42</answer> was
    scored), and sampled greedily whatever the temperature: the served eval measured the prompt."""
    import math

    model = str(warm_arith_model)
    common = dict(n=4, k=[1, 4], limit=12, max_new_tokens=16, temperature=1.0, progress=False)
    local = evaluate("arith", model, output_dir=tmp_path / "local", **common).summary
    sampler = OpenAISampler(served_tiny_model, str(servable_model), max_new_tokens=16, temperature=1.0)
    served = evaluate("arith", model, output_dir=tmp_path / "served", sampler=sampler, **common).summary
    rollouts = local["rollouts"]
    for key in ("accuracy", "reward/mean"):  # scores in [0, 1]: binomial noise bounds both
        p = (local[key] + served[key]) / 2
        noise = 4 * math.sqrt(max(p * (1 - p), 0.02) * 2 / rollouts)
        assert abs(local[key] - served[key]) <= noise, (key, local[key], served[key])

    def mean_length(folder):
        rows = [json.loads(line) for line in (folder / "rollouts.jsonl").read_text().splitlines()]
        return sum(len(r["completion"]) for r in rows) / len(rows)

    local_len, served_len = mean_length(tmp_path / "local"), mean_length(tmp_path / "served")
    assert 0.5 < served_len / local_len < 2, (local_len, served_len)  # an echoed prompt is ~8x longer
    assert served["echoed_prompt"] == 0 and served["warnings"] == [], served["warnings"]
    assert served["identical_samples"] < served["tasks"]


def test_an_echoed_prompt_and_greedy_samples_are_warned_about(scripted, tmp_path, capsys):
    """A server that returns the rendered prompt, the same text for every sample: both are named
    on the console and in summary.json, not scored silently."""
    env = envs.make("arith")
    task = env.tasks("test")[0]
    system, user = (m["content"] for m in env.prompt(task))
    scripted.reply = f"<|system|>\n{system}<|end|>\n<|user|>\n{user}<|end|>\n<|assistant|>\n"
    sampler = OpenAISampler(url(scripted), "served-model", max_new_tokens=8)
    options = dict(n=2, k=[1, 2], limit=2, output_dir=tmp_path, sampler=sampler, progress=False)
    summary = evaluate(env, "served-model", **options).summary
    assert summary["echoed_prompt"] >= 2 and summary["identical_samples"] == 2
    assert len(summary["warnings"]) == 2
    out = capsys.readouterr().out
    assert "WARNING: " in out and "contain the whole prompt" in out and "identical" in out
