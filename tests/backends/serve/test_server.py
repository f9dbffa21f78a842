"""``rlvr-gym serve``: OpenEnv's own client plays our envs over 127.0.0.1, and hostile clients
get clear errors while the others keep being served."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("openenv.core", reason="needs rlvr-gym[openenv]")
pytestmark = pytest.mark.slow  # a server (three envs, a sandbox pool) starts in ~12 s on 2 cores

from openenv.core import GenericEnvClient  # noqa: E402

from rlvr_gym import envs  # noqa: E402
from rlvr_gym.backends.serve import ServeOptions, check_bind, running  # noqa: E402
from rlvr_gym.error import InvalidArgumentError  # noqa: E402

ARITH = {"train_size": 50, "max_operand": 9}


@pytest.fixture(scope="module")
def url():
    with running(
        ["arith", "gsm8k", "gsm8k-python"],
        knobs={"arith": ARITH},
        options=ServeOptions(max_body_bytes=2**20, max_batch_items=2000),
    ) as base:
        yield base


def post(url: str, body: bytes | dict, headers: dict | None = None) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"content-type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url: str, headers: dict | None = None) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers or {}), timeout=30
        ) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# ----- OpenEnv's client plays an episode ------------------------------------------------------
def test_openenv_client_plays_arith_and_gsm8k(url):
    for name in ("arith", "gsm8k"):
        local = envs.make(name, **(ARITH if name == "arith" else {}))
        with GenericEnvClient(base_url=f"{url}/{name}").sync() as client:
            first = client.reset(split="test", index=4)
            task = local.tasks("test")[4]
            assert first.observation["prompt"] == local.prompt(task) and not first.done
            assert "task" not in first.observation  # the answer key stays on the server
            right = client.step({"completion": local.reference_completion(task)})
            assert right.done and right.reward == 1.0
            assert right.observation["passed"] is True and right.observation["reason"] == "correct"

            client.reset(split="test", index=4)
            wrong = client.step({"message": {"role": "assistant", "content": "I am not sure."}})
            assert wrong.observation["passed"] is False and wrong.observation["reason"] != "correct"
            assert wrong.reward == wrong.observation["score"] < 1.0


def test_openenv_client_plays_a_tool_env_turn_by_turn(url):
    local = envs.make("gsm8k-python")
    task = local.tasks("test")[0]
    with GenericEnvClient(base_url=f"{url}/gsm8k-python-v0").sync() as client:
        first = client.reset(split="test", index=0)
        assert [tool["function"]["name"] for tool in first.observation["tools"]] == local.tool_names()
        call = local.tool_call("run_python", code="print(6 * 7)")
        turn = client.step({"message": call})
        assert not turn.done and turn.reward is None
        assert turn.observation["prompt"][-1] == {"role": "tool", "name": "run_python", "content": "42\n"}
        final = client.step({"completion": local.reference_completion(task)})
        assert final.done and final.reward == 1.0 and final.observation["reason"] == "correct"
        with pytest.raises(RuntimeError, match="episode has ended"):
            client.step({"completion": "again"})


def test_a_group_shares_one_task_and_a_seed_poses_what_env_reset_does(url):
    local = envs.make("arith", **ARITH)
    expected = local.reset(seed=11)[1]["index"]
    with (
        GenericEnvClient(base_url=f"{url}/arith").sync() as a,
        GenericEnvClient(base_url=f"{url}/arith").sync() as b,
    ):
        assert a.reset(seed=11).observation["index"] == b.reset(seed=11).observation["index"] == expected
        assert (
            a.reset(split="train", index=7).observation["prompt"]
            == b.reset(split="train", index=7).observation["prompt"]
        )


def test_metadata_and_index_report_the_knobs(url):
    status, meta = get(f"{url}/arith/metadata")
    assert status == 200 and meta["name"] == "arith-v0"
    assert '"max_operand": 9' in meta["description"] and '"train_size": 50' in meta["description"]
    status, index = get(f"{url}/")
    assert index["envs"]["arith-v0"]["settings"] == ARITH
    assert index["envs"]["arith-v0"]["splits"]["train"] == 50  # the knob took effect
    assert index["envs"]["gsm8k-python-v0"]["tool_env"] is True


def test_bad_session_use_is_a_clear_error_and_the_session_goes_on(url):
    with GenericEnvClient(base_url=f"{url}/arith").sync() as client:
        with pytest.raises(RuntimeError, match="step before reset"):
            client.step({"completion": "<answer>1</answer>"})
        with pytest.raises(RuntimeError, match="out of range"):
            client.reset(split="train", index=50)
        with pytest.raises(RuntimeError, match="unknown reset fields"):
            client.reset(index=1, temperature=2)
        for bad in ({}, {"completion": "a", "message": {"content": "b"}}, {"completion": 5}):
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                client.step(bad)
        assert client.reset(index=1).observation["index"] == 1  # still served


# ----- the batch endpoint ---------------------------------------------------------------------
def test_batch_scores_1000_items_in_order_with_none_for_bad_labels(url):
    local = envs.make("gsm8k")
    tasks = local.tasks("test")
    n = 1000
    completions = [local.reference_completion(tasks[i]) if i % 2 == 0 else "#### -1" for i in range(n)]
    labels: list = [{"split": "test", "index": i} for i in range(n)]
    labels[3], labels[5] = {"split": "test", "index": 10**6}, "seven"
    status, body = post(f"{url}/gsm8k/score", {"completions": completions, "labels": labels})
    assert status == 200 and len(body["rewards"]) == n
    for i, (reward, verdict, error) in enumerate(
        zip(body["rewards"], body["verdicts"], body["errors"], strict=True)
    ):
        if i in (3, 5):
            assert reward is None and verdict is None and f"label {i}" in error
        else:
            assert error is None and reward == verdict["score"] == (1.0 if i % 2 == 0 else reward)
            assert verdict["passed"] is (i % 2 == 0)


def test_batch_takes_openrlhf_query_and_task_rows(url):
    local = envs.make("arith", **ARITH)
    task = local.tasks("train")[2]
    prompt = "Q: what is it?\nA: "
    status, body = post(
        f"{url}/arith/score",
        {
            "query": [prompt + local.reference_completion(task)],
            "prompts": [prompt],
            "labels": [{"task": dict(task)}],
        },
    )
    assert status == 200 and body["rewards"] == [1.0]


@pytest.mark.parametrize(
    ("payload", "status", "words"),
    [
        (b"{not json", 422, "JSON"),
        ({"completions": ["a", "b"], "labels": [0]}, 422, "2 completions but 1 labels"),
        ({"completions": ["a"], "query": ["a"], "labels": [0]}, 422, "exactly one"),
        ({"completions": ["a"] * 2001, "labels": [0] * 2001}, 413, "at most 2000"),
        ({"completions": ["x" * 1_100_000], "labels": [0]}, 413, "over 1048576 bytes"),
        ({"labels": [0], "completions": ["a"], "extra": 1}, 422, "extra"),
    ],
)
def test_batch_refuses_hostile_bodies_clearly(url, payload, status, words):
    got, body = post(f"{url}/arith/score", payload)
    assert got == status and words.lower() in json.dumps(body).lower()
    assert post(f"{url}/arith/score", {"completions": ["<answer>1</answer>"], "labels": [0]})[0] == 200


def test_unknown_env_names_the_served_ones(url):
    status, body = post(f"{url}/nope/score", {"completions": [], "labels": []})
    assert status == 404 and "arith-v0" in body["detail"] and "gsm8k-python-v0" in body["detail"]
    with pytest.raises(ConnectionError), GenericEnvClient(base_url=f"{url}/nope").sync() as client:
        client.reset()


# ----- hostile clients while others play --------------------------------------------------------
def test_oversized_ws_message_and_slow_client_do_not_stop_other_sessions(url):
    host, port = url.removeprefix("http://").split(":")
    slow = socket.create_connection((host, int(port)))
    slow.sendall(b"POST /arith/score HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")  # and then nothing
    try:
        with GenericEnvClient(base_url=f"{url}/arith").sync() as big:
            big.reset(index=0)
            with pytest.raises(Exception):  # noqa: B017 - the server closes the socket (1009), the client raises
                big.step({"completion": "x" * 1_100_000})
        with GenericEnvClient(base_url=f"{url}/arith").sync() as other:
            other.reset(index=0)
            assert other.step({"completion": "<answer>0</answer>"}).done
    finally:
        slow.close()


def refused_for_capacity(outcome: str) -> bool:
    """The server answers a session past the cap with CAPACITY_REACHED and closes it; OpenEnv's
    client reports the error frame, or (when the close wins the race on a loaded machine) the close."""
    return "CAPACITY_REACHED" in outcome or outcome.startswith("ConnectionClosed")


def test_a_session_flood_is_refused_with_capacity_reached():
    async def play(base: str) -> list[str]:
        clients = [GenericEnvClient(base_url=f"{base}/arith") for _ in range(4)]
        outcomes = []
        for client in clients:
            try:
                await client.reset(index=0)
                outcomes.append("ok")
            except Exception as exc:  # noqa: BLE001 - the error frame, or the close that follows it
                outcomes.append(f"{type(exc).__name__}: {exc}")
        for client in clients[:3]:
            await client.step({"completion": "<answer>1</answer>"})
            await client.close()
        with contextlib.suppress(Exception):  # the server already closed the refused one
            await clients[3].close()
        again = GenericEnvClient(base_url=f"{base}/arith")  # the slots came back
        outcomes.append("ok" if (await again.reset(index=0)) else "no")
        await again.close()
        return outcomes

    with running(["arith"], knobs={"arith": ARITH}, options=ServeOptions(max_sessions=3)) as base:
        outcomes = asyncio.run(play(base))
    assert outcomes[:3] == ["ok"] * 3 and outcomes[4] == "ok"
    assert refused_for_capacity(outcomes[3])


# ----- the wall: loopback by default, a token beyond ------------------------------------------------
def test_a_non_loopback_bind_needs_a_token():
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    with pytest.raises(InvalidArgumentError, match="give a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(InvalidArgumentError, match="at least 16"):
        check_bind("0.0.0.0", "short")
    check_bind("0.0.0.0", "a" * 32)


def test_cli_refuses_a_public_bind_without_a_token(capsys, monkeypatch):
    from rlvr_gym.trainers.cli import main

    monkeypatch.delenv("RLVR_GYM_SERVE_TOKEN", raising=False)
    assert main(["serve", "arith", "--host", "0.0.0.0"]) == 2
    assert "give a token" in capsys.readouterr().err


def test_knobs_come_from_the_command_line_per_env_or_for_all():
    from rlvr_gym.trainers.serve_cmd import knobs_by_env

    knobs = knobs_by_env(["arith", "gsm8k"], ["timeout=2", "arith:max_operand=9", "gsm8k:data_path=/x"])
    assert knobs == {"arith": {"timeout": 2, "max_operand": 9}, "gsm8k": {"timeout": 2, "data_path": "/x"}}
    with pytest.raises(InvalidArgumentError, match="not served"):
        knobs_by_env(["arith"], ["mbpp:timeout=1"])


def test_with_a_token_only_its_holders_are_served():
    token = "t" * 24
    with running(["arith"], knobs={"arith": ARITH}, token=token) as base:
        assert get(f"{base}/health")[0] == 401
        assert get(f"{base}/token/{'x' * 24}/health")[0] == 401
        assert get(f"{base}/health", {"Authorization": f"Bearer {token}"}) == (200, {"status": "healthy"})
        with pytest.raises(ConnectionError), GenericEnvClient(base_url=f"{base}/arith").sync() as client:
            client.reset()
        with GenericEnvClient(base_url=f"{base}/token/{token}/arith").sync() as client:
            assert client.reset(index=3).observation["index"] == 3
            assert client.step({"completion": "<answer>0</answer>"}).done


PARSE_WITH_VERIFIERS = """
import json, sys, urllib.request
from verifiers.v1.tasksets.openenv.taskset import parse_action
schema = json.load(urllib.request.urlopen(sys.argv[1] + "/schema"))["action"]
print(json.dumps(parse_action(sys.argv[2], schema)))
"""


def test_verifiers_openenv_taskset_turns_a_raw_reply_into_our_action(url, tmp_path):
    """PrimeIntellect verifiers 0.4 reaches OpenEnv servers through its ``openenv`` taskset, which
    reads the action schema from ``/schema`` and wraps a raw model reply into the one required
    field. Only this piece of verifiers runs here (its eval loop launches harness programs with
    ``uv``). In a clean interpreter: in this repo, ``import verifiers`` finds our own folder."""
    import subprocess
    import sys

    if subprocess.run([sys.executable, "-I", "-c", "import verifiers.v1"], cwd=tmp_path).returncode:
        pytest.skip("needs verifiers==0.4.0")
    local = envs.make("arith", **ARITH)
    reply = local.reference_completion(local.tasks("test")[1])
    run = subprocess.run(
        [sys.executable, "-I", "-c", PARSE_WITH_VERIFIERS, f"{url}/arith", reply],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    action = json.loads(run.stdout)
    assert action == {"completion": reply}
    with GenericEnvClient(base_url=f"{url}/arith").sync() as client:
        client.reset(split="test", index=1)
        assert client.step(action).observation["passed"] is True


def test_a_killed_server_loses_no_answered_verdict(tmp_path):
    """kill -9 while sessions are in flight: every verdict a client received is in the journal."""
    import os
    import signal
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    journal = tmp_path / "verdicts.jsonl"
    command = [sys.executable, "-m", "rlvr_gym.trainers.cli", "serve", "arith", "--port", str(port)]
    server = subprocess.Popen([*command, "--verdict-log", str(journal), "--env-arg", "train_size=50"])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                get(f"{base}/health")
                break
            except OSError:
                time.sleep(0.1)

        answered: list[str] = []

        async def episode(i: int) -> None:
            client = GenericEnvClient(base_url=f"{base}/arith")
            try:
                await client.reset(index=i % 50, episode_id=f"episode-{i}")
                result = await client.step({"completion": f"<answer>{i}</answer>"})
                if result.done:
                    answered.append(f"episode-{i}")
            except Exception:  # noqa: BLE001 - the kill cuts some sessions off: those got no verdict
                pass
            finally:
                with contextlib.suppress(Exception):
                    await client.close()

        async def play() -> None:
            await asyncio.gather(*(episode(i) for i in range(40)))  # all answered
            wave = asyncio.gather(*(episode(i) for i in range(40, 440)))
            for _ in range(400):  # kill once part of the wave is answered, the rest in flight
                if len(answered) >= 60:
                    break
                await asyncio.sleep(0.05)
            os.kill(server.pid, signal.SIGKILL)
            await wave

        asyncio.run(play())
    finally:
        server.kill()
        server.wait(30)
    from rlvr_gym.backends.serve.journal import read_journal

    logged = {record["episode"] for record in read_journal(journal)}
    print(f"answered {len(answered)} of 440; journal {len(logged)}")
    assert len(answered) >= 40 and set(answered) <= logged


def test_an_idle_session_is_reaped_and_its_slot_freed():
    """OpenEnv's reaper runs on mounted env apps too (the root's lifespan starts it): a client that
    goes silent loses its slot after --session-timeout-s, and the slot serves someone else.
    (OpenEnv frees the slot but leaves the idle client's socket open.)"""

    async def play(base: str) -> tuple[str, bool]:
        idle = GenericEnvClient(base_url=f"{base}/arith")
        await idle.reset(index=0)
        early = GenericEnvClient(base_url=f"{base}/arith")
        try:
            await early.reset(index=1)
            refused = "served"
        except Exception as exc:  # noqa: BLE001 - the error frame, or the close that follows it
            refused = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(Exception):
            await early.close()
        await asyncio.sleep(7.5)  # the reaper looks every max(timeout / 4, 5) s
        fresh = GenericEnvClient(base_url=f"{base}/arith")
        await fresh.reset(index=1)
        done = (await fresh.step({"completion": "<answer>1</answer>"})).done
        for client in (fresh, idle):
            with contextlib.suppress(Exception):
                await client.close()
        return refused, done

    options = ServeOptions(max_sessions=1, session_timeout_s=1.0)
    with running(["arith"], knobs={"arith": ARITH}, options=options) as base:
        refused, done = asyncio.run(play(base))
    assert refused_for_capacity(refused) and done


def test_openenv_http_routes_answer_hostile_requests_clearly(url):
    """OpenEnv's stateless HTTP /reset and /step (a fresh env per request) on our envs."""
    status, body = post(f"{url}/arith/reset", {"index": 3})
    assert status == 200 and body["observation"]["index"] == 3 and body["done"] is False
    status, body = post(f"{url}/arith/step", {"action": {"completion": "<answer>1</answer>"}})
    assert status == 409 and "step before reset" in body["detail"]  # HTTP has no session to step
    status, body = post(f"{url}/arith/reset", {"index": "three"})
    assert status == 409 and "must be an int" in body["detail"]
    assert post(f"{url}/arith/reset", b"{oops")[0] == 422
    assert post(f"{url}/arith/step", {"action": {"nothing": 1}})[0] == 422
    status, schema = get(f"{url}/gsm8k-python/schema")
    assert status == 200 and "tools" in schema["observation"]["properties"]
