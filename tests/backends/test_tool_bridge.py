"""Tool envs on every loop: one task per GRPO group, and one score for one episode whether it is
played through ``env.step``, TRL's ``environment_factory`` or ``evaluate()``."""

from __future__ import annotations

from typing import Any

import pytest

from rlvr_gym import envs
from rlvr_gym.error import InvalidArgumentError

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

TOOL_ENVS = sorted(
    i
    for i in envs.registry
    if "/" not in i and isinstance(envs.spec(i).load(), type) and issubclass(envs.spec(i).load(), envs.MultiTurnEnv)
)


@pytest.fixture(scope="module", params=TOOL_ENVS)
def tool_env(request):
    env = envs.make(request.param)
    yield env
    env.close()


def test_every_builtin_tool_env_is_covered():
    assert {"gsm8k-python-v0", "math500-python-v0", "humaneval-feedback-v0"} <= set(TOOL_ENVS)


def test_a_row_without_a_task_is_refused_not_posed_the_next_seeded_task():
    """TRL's placeholder rows (no train_dataset) would pose each rollout of a group another task."""
    from rlvr_gym.backends.trl_adapter import environment_factory

    Env = environment_factory("gsm8k-python")
    with pytest.raises(InvalidArgumentError, match="train_dataset"):
        Env().reset(prompt=[{"role": "user", "content": ""}])
    with pytest.raises(InvalidArgumentError, match="same env"):
        Env().reset(task_env="gsm8k-v0", task_split="train", task_index=0)


def test_a_group_posed_two_tasks_is_refused():
    from rlvr_gym.backends.tool_rewards import EpisodeRewards, check_one_task_per_group
    from rlvr_gym.backends.trl_adapter import environment_factory

    check_one_task_per_group([("train", 1)] * 4 + [("train", 2)] * 4, 4)
    with pytest.raises(InvalidArgumentError, match="2 different tasks"):
        check_one_task_per_group([("train", 1), ("train", 1), ("train", 2), ("train", 2)], 4)
    env = envs.make("gsm8k-python")
    Env = environment_factory(env)
    rollouts = [Env(), Env()]
    for rollout, index in zip(rollouts, (0, 1), strict=True):
        rollout.reset(task_split="train", task_index=index)
    rewards = EpisodeRewards(env, num_generations=2)
    with pytest.raises(InvalidArgumentError, match="different tasks"):
        rewards.reward(prompts=[None, None], completions=[[], []], environments=rollouts)


def test_rows_drawn_as_trl_draws_them_pose_one_task_per_group(tool_env):
    """TRL's own sampler over our dataset, and ``reset(**row)`` per rollout: count the distinct
    tasks each group of ``num_generations`` rollouts was posed."""
    from trl.trainer.utils import RepeatSampler

    from rlvr_gym.backends.tool_rewards import check_one_task_per_group
    from rlvr_gym.backends.trl_adapter import dataset, environment_factory

    group = 4
    split = tool_env.splits[0]
    rows = dataset(tool_env, split)
    order = list(RepeatSampler(rows, mini_repeat_count=group, batch_size=3, repeat_count=1, seed=7))[: group * 6]
    Env = environment_factory(tool_env)
    posed = []
    for i in order:
        rollout = Env()
        assert rollout.reset(**rows[i]) is None  # the prompt is the row's; nothing appended
        posed.append(rollout._posed())
    groups = [posed[start : start + group] for start in range(0, len(posed), group)]
    assert [len(set(g)) for g in groups] == [1] * len(groups)
    assert len({g[0] for g in groups}) > 1  # ... and the groups are not all one task
    check_one_task_per_group(posed, group)


class ReplaySampler:
    """A policy that writes a task's reference episode, message by message (found by its question)."""

    engine = "replay"

    def __init__(self, env: envs.MultiTurnEnv, split: str) -> None:
        self.episodes = {
            env.prompt(task)[-1]["content"]: env.reference_episode(task) for task in env.tasks(split)[:2]
        }

    def sample(self, prompt: Any, n: int, seed: int, *, tools: list | None = None) -> list[Any]:
        assert tools, "a tool env's prompt is rendered with its tools"
        question = next(m["content"] for m in prompt if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in prompt)
        return [self.episodes[question][turn]] * n


def _trl_rollout(env: envs.MultiTurnEnv, row: dict[str, Any], episode: list[dict[str, Any]]):
    """Play ``episode`` the way TRL's tool loop does: each tool call runs the bridge's method and
    its answer is appended as a ``tool`` message; the rollout ends at a message without tool
    calls, which the env is never shown. Returns the instance and TRL's completion messages."""
    from rlvr_gym.backends.trl_adapter import environment_factory

    rollout = environment_factory(env)()
    rollout.reset(**row)
    completion: list[dict[str, Any]] = []
    for message in episode:
        completion.append(message)
        for call in message.get("tool_calls", []):
            function = call["function"]
            answer = getattr(rollout, function["name"])(**function["arguments"])
            completion.append({"role": "tool", "name": function["name"], "content": str(answer)})
    return rollout, completion


def test_the_reference_episode_scores_the_same_through_step_trl_and_evaluate(tool_env, tmp_path):
    from rlvr_gym.backends.trl_adapter import dataset, reward_funcs
    from rlvr_gym.trainers.evaluate import evaluate

    split = tool_env.splits[0]
    row = dataset(tool_env, split)[0]
    task = tool_env.tasks(split)[0]
    episode = tool_env.reference_episode(task)
    assert not episode[-1].get("tool_calls"), "the reference episode ends with a plain final message"

    tool_env.reset(options={"index": 0, "split": split})
    for message in episode:
        _, by_step, terminated, truncated, info = tool_env.step(message)
    assert terminated and not truncated

    rollout, completion = _trl_rollout(tool_env, row, episode)
    (episode_reward,) = reward_funcs(tool_env)
    (by_trl,) = episode_reward(
        prompts=[row["prompt"]],
        completions=[completion],
        environments=[rollout],
        task_split=[row["task_split"]],
        task_index=[row["task_index"]],
    )

    result = evaluate(
        tool_env, "replay", n=1, split=split, limit=1, output_dir=tmp_path, sampler=ReplaySampler(tool_env, split),
        progress=False,
    )
    (eval_row,) = result.rollouts
    assert by_step == by_trl == result.summary["reward/mean"] == 1.0
    assert eval_row["verdict"]["passed"] and eval_row["turns"] == info["turns"]
    roles = [m["role"] for m in eval_row["completion"]]
    assert roles.count("assistant") == len(episode)
    assert roles.count("tool") == sum(len(m.get("tool_calls", [])) for m in episode)


def test_a_final_plain_answer_under_trl_is_scored_as_env_step_scores_it():
    """The prompt invites a plain ``<answer>`` reply: under TRL's loop it is the answer too."""
    from rlvr_gym.backends.trl_adapter import dataset, reward_funcs

    env = envs.make("gsm8k-python")
    row = dataset(env, "train")[0]
    answer = env.tasks("train")[0]["answer"]
    rewards = []
    for final in (f"<answer>{answer}</answer>", "<answer>-1</answer>", "I do not know"):
        rollout, completion = _trl_rollout(env, row, [{"role": "assistant", "content": final}])
        rewards += reward_funcs(env)[0](
            prompts=[row["prompt"]], completions=[completion], environments=[rollout]
        )
    assert rewards == [1.0, 0.0, 0.0]
    env.close()


def test_tool_env_rewards_refuse_to_score_outside_the_tool_loop():
    from rlvr_gym.backends.trl_adapter import reward_funcs

    env = envs.make("gsm8k-python")
    with pytest.raises(InvalidArgumentError, match="environment_factory"):
        reward_funcs(env)[0](prompts=["p"], completions=["<answer>1</answer>"], task_split=["train"], task_index=[0])
    env.close()


# ----- the openai engine: native tools, and the text form where a server has none ---------------


def _tool_server(native: bool):
    """A chat-completions server on 127.0.0.1 playing one episode: first a ``run_python`` call
    that prints the answer, then the answer. ``native``: through ``tools``/``tool_calls``; else
    it refuses ``tools`` (HTTP 400) and writes ``<tool_call>`` text."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answer = envs.make("gsm8k").tasks("test")[0]["answer"]
    call = {"name": "run_python", "arguments": {"code": f"print({answer})"}}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.server.requests.append(body)
            messages = body["messages"]
            if "tools" in body and not native:
                return self._send(400, {"error": {"message": "tools are not supported", "type": "x"}})
            replied = any(m["role"] == "tool" or "<tool_response>" in str(m.get("content")) for m in messages)
            if replied:
                message = {"role": "assistant", "content": f"<answer>{answer}</answer>"}
            elif native:
                function = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_7", "type": "function", "function": function}],
                }
            else:
                message = {"role": "assistant", "content": f"<tool_call>\n{json.dumps(call)}\n</tool_call>"}
            choices = [{"index": i, "finish_reason": "stop", "message": message} for i in range(body.get("n", 1))]
            self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": choices})

        def _send(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.slow
@pytest.mark.parametrize("native", [True, False], ids=["native-tools", "text-fallback"])
def test_the_openai_engine_plays_tool_episodes(native, tmp_path):
    pytest.importorskip("openai")
    from rlvr_gym.trainers.evaluate import evaluate
    from rlvr_gym.trainers.openai_engine import OpenAISampler

    server = _tool_server(native)
    try:
        sampler = OpenAISampler(f"http://127.0.0.1:{server.server_address[1]}/v1", "m", max_retries=0)
        env = envs.make("gsm8k-python")
        result = evaluate(env, "m", n=2, k=[1, 2], limit=1, output_dir=tmp_path, sampler=sampler, progress=False)
        env.close()
    finally:
        server.shutdown()
    assert result.summary["accuracy"] == 1.0 and result.summary["pass@k"]["pass@2"] == 1.0
    assert result.summary["tools/calls_per_episode"] == 1.0
    for row in result.rollouts:
        assert [m["role"] for m in row["completion"]] == ["assistant", "tool", "assistant"]
        assert row["turns"][0]["tool_calls"][0]["ok"]
    followups = [b for b in server.requests if len(b["messages"]) > 2]
    if native:
        assert all("tools" in b for b in server.requests)
        assert followups[0]["messages"][-1] == {"role": "tool", "tool_call_id": "call_7", "content": result.rollouts[0]["completion"][1]["content"]}
    else:
        assert "<tool_call>" in followups[0]["messages"][0]["content"]  # the tools described in the system message
        assert followups[0]["messages"][-1]["role"] == "user"
        assert "<tool_response>" in followups[0]["messages"][-1]["content"]


# ----- train and eval run the tool loop ----------------------------------------------------------


@pytest.mark.slow
def test_train_runs_a_tool_env_through_the_tool_loop(tmp_path, monkeypatch):
    """``trainers.train`` on the trl backend: TRL's tool loop, tool metrics in metrics.jsonl and
    the report, each sampled episode's messages and turns in rollouts.jsonl, one task per group."""
    import json

    from rlvr_gym.trainers import RunConfig, train
    from rlvr_gym.trainers.report import build_report

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    config = RunConfig(
        max_steps=2,
        num_generations=2,
        prompts_per_step=2,
        max_completion_length=16,
        max_prompt_length=4096,
        rollout_log_steps=1,
        logging_steps=1,
        output_dir=str(tmp_path / "run"),
    )
    result = train("gsm8k-python", config, backend="trl", audit=False)
    rows = [r for r in result.metrics if "reward/mean" in r]
    assert len(rows) == 2
    for key in ("tools/calls_per_episode", "tools/errors_per_episode", "episode/turns", "episode/truncated"):
        assert all(key in r for r in rows), key
    rollouts = [json.loads(line) for line in (result.output_dir / "rollouts.jsonl").read_text().splitlines()]
    assert {r["step"] for r in rollouts} == {0, 1}  # TRL samples step N's batch at global_step N - 1
    for step in (0, 1):
        group = [r for r in rollouts if r["step"] == step]
        assert len(group) == 2 and len({(r["split"], r["index"]) for r in group}) == 1  # one task per group
    for row in rollouts:
        assert isinstance(row["completion"], list) and row["completion"][0]["role"] == "assistant"
        assert isinstance(row["turns"], list) and row["verdict"]["reason"]
    page = build_report(result.output_dir).page.read_text()
    # the metrics table groups by prefix: a "tools" group with its per-episode rows
    assert "<th colspan='3'>tools</th>" in page and "calls_per_episode" in page


@pytest.mark.slow
def test_evaluate_plays_tool_episodes_with_the_local_engine(tmp_path):
    """The transformers engine renders the tools in the chat template; each sample is an episode."""
    from rlvr_gym.trainers.evaluate import evaluate
    from rlvr_gym.trainers.tiny_model import build_tiny_model

    env = envs.make("gsm8k-python", max_turns=2)
    model = build_tiny_model(tmp_path / "tiny", env, tools=True)
    result = evaluate(env, model, n=2, k=[1, 2], limit=1, max_new_tokens=8, output_dir=tmp_path / "eval", progress=False)
    assert result.summary["rollouts"] == 2 and "pass@2" in result.summary["pass@k"]
    assert "episode/turns" in result.summary
    for row in result.rollouts:
        assert isinstance(row["completion"], list) and row["completion"][0]["role"] == "assistant"
        assert 1 <= len(row["turns"]) <= 2
    again = evaluate(env, model, n=2, k=[1, 2], limit=1, max_new_tokens=8, output_dir=tmp_path / "eval", progress=False)
    assert again.summary["this_session"]["rollouts_resumed"] == 2  # resumed, nothing replayed
    env.close()
