"""Adapters into peers' frameworks, each driven by the peer's own package.

skyrl-gym runs here (``pip install skyrl-gym==0.4.0``). verl pins transformers < 5.11, so its test
runs verl's own custom-reward-function loader in verl's venv: set ``RLVR_GYM_VERL_PYTHON`` to that
venv's python (``bench/peer_venvs.sh`` builds one)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr_gym import envs
from rlvr_gym.backends.task_labels import label_of, locate, task_of
from rlvr_gym.error import Error

ROOT = Path(__file__).resolve().parents[3]


def test_labels_name_tasks_or_say_what_is_wrong():
    env = envs.make("arith", train_size=20)
    assert task_of(env, 3) == env.tasks("train")[3]
    assert task_of(env, json.dumps(label_of("test", 4))) == env.tasks("test")[4]
    assert locate(env, {"task": {"a": 1}}) is None and task_of(env, {"task": {"a": 1}}) == {"a": 1}
    for bad, words in [
        (20, "out of range"),
        ("{", "must be JSON"),
        ({"index": 1, "answer": 5}, "a label is"),
        (True, "integer"),
        ({"split": "dev", "index": 0}, "unknown split"),
        ("x" * 1_000_001, "over"),
    ]:
        with pytest.raises(Error, match=words):
            task_of(env, bad)


# ----- skyrl-gym ----------------------------------------------------------------------------
@pytest.mark.slow
def test_skyrl_gym_makes_and_plays_a_single_step_env():
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="needs skyrl-gym==0.4.0")
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    from rlvr_gym.backends.peers.skyrl_env import ENV_CLASS, register

    register()
    register()  # twice is fine
    local = envs.make("gsm8k")
    task = local.tasks("test")[2]
    extras = {"reward_spec": {"method": "rule", "ground_truth": label_of("test", 2)}}
    for completion, reward in [(local.reference_completion(task), 1.0), ("#### -3", None)]:
        env = skyrl_gym.make(ENV_CLASS, env_config={"env_id": "gsm8k"}, extras=extras)
        assert isinstance(env, BaseTextEnv)
        prompt, _ = env.init([])
        assert prompt == local.prompt(task)
        out = env.step(completion)
        assert out["done"] and out["observations"] == []
        assert out["metadata"]["verdict"]["passed"] is (reward == 1.0)
        assert out["reward"] == (reward if reward is not None else out["metadata"]["verdict"]["score"]) < 1.01
        with pytest.raises(Error, match="ended"):
            env.step(completion)


@pytest.mark.slow
def test_skyrl_gym_plays_a_tool_env_turn_by_turn():
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="needs skyrl-gym==0.4.0")
    from rlvr_gym.backends.peers.skyrl_env import ENV_CLASS, register

    register()
    local = envs.make("gsm8k-python")
    task = local.tasks("train")[5]
    env = skyrl_gym.make(
        ENV_CLASS,
        env_config={"env_id": "gsm8k-python", "env_kwargs": {"max_turns": 3}},
        extras={"reward_spec": {"ground_truth": json.dumps(label_of("train", 5))}},
    )
    prompt, meta = env.init([{"role": "user", "content": "the row's prompt"}])
    assert prompt == [{"role": "user", "content": "the row's prompt"}]
    assert [t["function"]["name"] for t in meta["tools"]] == local.tool_names()
    call = '<tool_call>{"name": "run_python", "arguments": {"code": "print(6 * 7)"}}</tool_call>'
    out = env.step(call)
    assert not out["done"] and out["reward"] == 0.0
    assert out["observations"] == [{"role": "tool", "name": "run_python", "content": "42\n"}]
    out = env.step(local.reference_completion(task))
    assert out["done"] and out["reward"] == 1.0 and out["metadata"]["verdict"]["reason"] == "correct"


def test_skyrl_gym_refuses_a_row_without_a_label():
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="needs skyrl-gym==0.4.0")
    from rlvr_gym.backends.peers.skyrl_env import ENV_CLASS, register

    register()
    with pytest.raises(Error, match="task label"):
        skyrl_gym.make(ENV_CLASS, env_config={"env_id": "arith"}, extras={})
    with pytest.raises(Error, match="give the env"):
        skyrl_gym.make(ENV_CLASS, env_config={}, extras={"reward_spec": {"ground_truth": 0}})


# ----- verl ------------------------------------------------------------------------------------
VERL_SCRIPT = r"""
import json, sys
from omegaconf import OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn
import verl

path, cases = sys.argv[1], json.loads(sys.argv[2])
config = OmegaConf.create({"reward": {"custom_reward_function": {
    "path": path, "name": "compute_score", "reward_kwargs": {"env_kwargs": {"timeout": 5.0}}}}})
fn = get_custom_reward_fn(config)
out = [fn(data_source=c["data_source"], solution_str=c["solution"], ground_truth=c["ground_truth"],
          extra_info=c["extra_info"]) for c in cases]
print(json.dumps({"verl": verl.__version__, "results": out}))
"""


@pytest.mark.slow
def test_verl_loads_compute_score_with_its_own_loader(tmp_path):
    python = os.environ.get("RLVR_GYM_VERL_PYTHON")
    if not python:
        pytest.skip("set RLVR_GYM_VERL_PYTHON to a venv's python with verl==0.9.1 (bench/peer_venvs.sh)")
    from rlvr_gym.backends.peers import verl_reward

    local = envs.make("gsm8k")
    rows = verl_reward.verl_rows(local, "test", limit=3)
    tasks = local.tasks("test")
    cases = [
        {**rows[0], "solution": local.reference_completion(tasks[0])},
        {**rows[1], "solution": "#### -1"},
        {**rows[2], "solution": "", "ground_truth": json.dumps(rows[2]["reward_model"]["ground_truth"])},
    ]
    cases = [
        {
            "data_source": c["data_source"],
            "solution": c["solution"],
            "ground_truth": c.get("ground_truth", c["reward_model"]["ground_truth"]),
            "extra_info": c["extra_info"],
        }
        for c in cases
    ]
    run = subprocess.run(
        [python, "-c", VERL_SCRIPT, verl_reward.__file__, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "RLVR_GYM_DATA_DIR": os.environ.get("RLVR_GYM_DATA_DIR", "")},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["verl"].startswith("0.9")
    scores = [r["score"] for r in report["results"]]
    assert scores[0] == 1.0 and report["results"][0]["acc"] is True
    assert scores[1] < 1.0 and report["results"][1]["reason"] == "wrong_answer"
    assert report["results"][2]["acc"] is False and report["results"][2]["reason"] in (
        "no_answer",
        "bad_format",
    )
    assert sys.executable != python  # verl ran in its own interpreter, not ours


# ----- PrimeIntellect verifiers ----------------------------------------------------------------
def needs_verifiers() -> None:
    """Skip unless PrimeIntellect's package is installed (looked up by its distribution: here
    ``import verifiers`` would find our own folder)."""
    try:
        importlib.metadata.version("verifiers")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("needs rlvr-gym[verifiers] (verifiers==0.4.0)")


# Runs in a clean interpreter from a temp dir: inside the repo, ``import verifiers`` finds our own
# top-level ``verifiers/`` folder (pytest puts the repo root on sys.path).
VERIFIERS_SCRIPT = r"""
import asyncio, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
import verifiers

from rlvr_gym.backends.peers import shared_env
from rlvr_gym.backends.peers.verifiers_env import env_config, load_environment

env_id, knobs, replies = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
seen = []

class Model(BaseHTTPRequestHandler):
    # A fixed 'model': the reply is looked up by the question it is asked.
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        seen.append(self.path)
        question = body["messages"][-1]["content"]
        text = replies.get(question, "no idea")
        if body.get("stream"):
            chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                  "finish_reason": "stop"}]}
            out = ("data: " + json.dumps(chunk) + "\n\ndata: [DONE]\n\n").encode()
            kind = "text/event-stream"
        else:
            out = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
threading.Thread(target=server.serve_forever, daemon=True).start()
assert type(load_environment(env_id, **knobs)).__name__ == "SingleAgentEnv"
config = EvalConfig(
    env=env_config(env_id, **knobs),
    model="fixed",
    client={"base_url": f"http://127.0.0.1:{server.server_port}/v1", "api_key_var": "FIXED_KEY"},
    select={"limit": len(replies)},
    num_rollouts=1,
    rich=None,
    push=False,
    output_dir=sys.argv[4],
)
episodes = asyncio.run(run_eval(config))
out = []
for episode in episodes:
    (trace,) = episode.traces
    out.append({"label": trace.task.data.label, "reward": trace.reward, "ok": trace.ok,
                "reply": trace.last_reply, "verdict": trace.info.get("verdict"),
                "errors": [str(e) for e in trace.errors]})
print(json.dumps({"verifiers": verifiers.__version__, "paths": sorted(set(seen)), "episodes": out}))
"""


@pytest.mark.slow
def test_verifiers_eval_loop_scores_an_env_with_our_verdicts(tmp_path):
    needs_verifiers()
    knobs = {"seed": 3}
    local = envs.make("arith", **knobs)
    tasks = local.tasks(local.splits[0])[:4]
    # Two right answers, a near miss (partial credit), one unanswered: each reward must be our verdict.
    near = f"<answer>{int(tasks[2]['answer']) + 1}</answer>"
    completions = [local.reference_completion(tasks[0]), local.reference_completion(tasks[1]), near, ""]
    replies = {local.question(task): text for task, text in zip(tasks, completions, strict=True)}
    run = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            VERIFIERS_SCRIPT,
            "arith",
            json.dumps(knobs),
            json.dumps(replies),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "FIXED_KEY": "unused"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["verifiers"].startswith("0.4")
    assert report["paths"] == ["/v1/chat/completions"]  # every rollout asked the model server
    by_index = {e["label"]["index"]: e for e in report["episodes"]}
    assert sorted(by_index) == [0, 1, 2, 3]
    for index, (task, text) in enumerate(zip(tasks, completions, strict=True)):
        expected = local.verify(text, task)
        episode = by_index[index]
        assert episode["ok"], episode["errors"]
        assert episode["verdict"]["score"] == expected.score and episode["reward"] == expected.score
        assert episode["verdict"]["reason"] == expected.reason
    assert [by_index[i]["reward"] for i in range(4)][:2] == [1.0, 1.0]
    assert 0.0 < by_index[2]["reward"] < 1.0 and by_index[3]["verdict"]["reason"] == "no_answer"


VERIFIERS_REFUSALS = r"""
import json
from rlvr_gym.backends.peers.verifiers_env import env_config
from rlvr_gym.error import Error

out = {}
for name, call in {
    "unknown env": lambda: env_config("no-such-env"),
    "tool env": lambda: env_config("gsm8k-python"),
    "bad split": lambda: env_config("arith", split="nope"),
    "bad knob": lambda: env_config("arith", seed="x"),
}.items():
    try:
        call()
        out[name] = None
    except Error as e:
        out[name] = str(e)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_verifiers_adapter_refuses_what_it_cannot_play_with_our_errors(tmp_path):
    needs_verifiers()
    run = subprocess.run(
        [sys.executable, "-I", "-c", VERIFIERS_REFUSALS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert all(out.values()), out  # each raised an rlvr_gym.Error, none a traceback from verifiers
    assert "tool env" in out["tool env"] and "nope" in out["bad split"]
