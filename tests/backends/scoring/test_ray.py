"""``ray`` scoring on Ray's own multi-node simulator (``ray.cluster_utils.Cluster``), on loopback.

Every node is started with ``node_ip_address=127.0.0.1`` and no dashboard, and the driver joins
through :func:`rlvr_gym.backends.scoring.ray.connect`, which keeps it on loopback too; one test
reads the sockets of every Ray process (``ss -tnp``) and the node table to prove nothing listens
or connects anywhere else.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.timing import bound

ray = pytest.importorskip("ray", reason="the ray scoring tests need rlvr-gym[ray]")

from ray.cluster_utils import Cluster  # noqa: E402

from rlvr_gym import envs  # noqa: E402
from rlvr_gym.backends.rewards import EnvRewards  # noqa: E402
from rlvr_gym.backends.scoring import make_scorer, scored_by  # noqa: E402
from rlvr_gym.backends.scoring.ray import (  # noqa: E402
    ClusterUnreachableError,
    RayScorer,
    WallsMissingError,
    connect,
)
from rlvr_gym.envs.code_env import fenced  # noqa: E402
from rlvr_gym.error import UnknownEnvError  # noqa: E402
from rlvr_gym.verifiers.code.sandbox import NO_NAMESPACES_ENV  # noqa: E402
from tests.support.code import HUMANEVAL  # noqa: E402

pytestmark = pytest.mark.slow
LOOPBACK = "127.0.0.1"


def add_node(cluster: Cluster, cpus: int):
    return cluster.add_node(node_ip_address=LOOPBACK, num_cpus=cpus)


@pytest.fixture(scope="module")
def cluster():
    """A head with no CPUs (the GPU host: it runs the driver, no scoring) and two 1-CPU nodes."""
    BEFORE_RAY.update(sockets_of(os.getpid()))  # e.g. a gloo store an earlier test left in pytest
    made = Cluster(
        initialize_head=True,
        head_node_args={"node_ip_address": LOOPBACK, "num_cpus": 0, "include_dashboard": False},
    )
    for _ in range(2):
        add_node(made, 1)
    yield made
    if ray.is_initialized():
        ray.shutdown()
    made.shutdown()


def humaneval_batch(n_tasks: int = 6):
    if not HUMANEVAL.exists():
        pytest.skip(f"offline HumanEval copy not found at {HUMANEVAL}")
    env = envs.make("humaneval", data_path=HUMANEVAL)
    tasks = list(env.tasks("test"))[:n_tasks]
    completions, rows = [], []
    for task in tasks:  # a group of 4 per task: canonical twice, two wrong bodies
        wrong = fenced(task["prompt"] + "    return None\n")
        off_by = fenced(task["prompt"] + "    raise ValueError('no')\n")
        completions += [env.reference_completion(task), wrong, env.reference_completion(task), off_by]
        rows += [task] * 4
    return env, completions, rows


def gsm8k_batch(n_tasks: int = 40):
    env = envs.make("gsm8k")
    tasks = list(env.tasks("test"))[:n_tasks]
    completions, rows = [], []
    for task in tasks:
        completions += [env.reference_completion(task), *env.wrong_completions(task)[3:5]]
        rows += [task] * 3
    return env, completions, rows


def as_dicts(verdicts):
    return [v.to_dict() for v in verdicts]


@pytest.mark.parametrize("batch", [humaneval_batch, gsm8k_batch], ids=["humaneval", "gsm8k"])
def test_ray_verdicts_equal_local_verdicts(cluster, batch):
    env, completions, tasks = batch()
    local = env.verify_batch(completions, tasks)
    assert {v.passed for v in local} == {True, False}  # both kinds, or the comparison proves little
    scorer = make_scorer(env, "ray", ray_address=cluster.address)
    try:
        assert sorted(scorer.nodes().values()) == [1, 1]  # one 1-CPU actor on each CPU node
        remote = asyncio.run(scorer.ascore(completions, tasks, timeout_s=120))  # the awaitable path
    finally:
        scorer.close()
    assert as_dicts(remote) == as_dicts(local)


def test_a_node_removed_mid_batch_loses_and_duplicates_nothing(cluster, capsys):
    if not HUMANEVAL.exists():
        pytest.skip(f"offline HumanEval copy not found at {HUMANEVAL}")
    from rlvr_gym.verifiers.code.sandbox import Limits

    # Every item sleeps 0.25 s first, so the batch outlasts the node's removal (restricted=False:
    # RestrictedPython would refuse the import before the sandbox runs it).
    env = envs.make("humaneval", data_path=HUMANEVAL, limits=Limits(wall_s=5.0), restricted=False)
    nap = "    __import__('time').sleep(0.25)\n"
    completions, tasks = [], []
    for task in list(env.tasks("test"))[:8]:
        right, wrong = fenced(task["prompt"] + nap + task["canonical_solution"]), fenced(task["prompt"] + nap)
        completions += [right, wrong, right, wrong]
        tasks += [task] * 4
    local = as_dicts(env.verify_batch(completions, tasks))
    assert {v["passed"] for v in local} == {True, False}
    extra = add_node(cluster, 1)
    scorer = RayScorer(env, address=cluster.address, chunk_size=2)
    result: dict = {}
    try:
        assert len(scorer.nodes()) == 3
        worker = threading.Thread(target=lambda: result.update(v=scorer.score(completions, tasks)))
        worker.start()
        # The node goes once the first chunk is back: every actor then holds chunks in flight.
        deadline = time.monotonic() + 60
        while scorer.stats["chunks_done"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        alive = sum(bool(n.get("Alive")) for n in ray.nodes())
        cluster.remove_node(extra, allow_graceful=False)
        worker.join(120)
        assert not worker.is_alive(), "the batch hung after losing a node"
        # Ray's control store marks the node dead a while after its processes die (its health
        # checks); on a slow machine the batch, re-run chunks and all, can finish first. The count
        # and the console line are the scorer's once the cluster knows.
        deadline = time.monotonic() + bound(30)
        while sum(bool(n.get("Alive")) for n in ray.nodes()) >= alive and time.monotonic() < deadline:
            time.sleep(0.2)
        report = scorer.report()
    finally:
        scorer.close()
    # the console says where scoring runs and the loss in one line each; summary.json counts it
    out = capsys.readouterr().out
    assert "scoring on Ray at" in out and "3 node(s), 3 actor(s)" in out
    assert out.count("left the Ray cluster") == 1
    assert report["lost_nodes"] == 1 and report["rerun_items"] > 0 and report["nodes"] == 2
    assert scorer.stats["lost_actors"] >= 1, "the batch never saw the node go: the test proved nothing"
    assert len(result["v"]) == len(completions) and None not in result["v"]  # nothing lost
    assert as_dicts(result["v"]) == local  # every item once, in order, as local scores it
    assert scorer.stats["rerun_items"] > 0  # the removed node's chunks ran elsewhere


def test_items_missing_the_budget_are_left_unscored_never_zeroed(cluster):
    if not HUMANEVAL.exists():
        pytest.skip(f"offline HumanEval copy not found at {HUMANEVAL}")
    from rlvr_gym.verifiers.code.sandbox import Limits

    # restricted=False: RestrictedPython would refuse `import time` before the sandbox runs it.
    env = envs.make("humaneval", data_path=HUMANEVAL, limits=Limits(wall_s=3.0), restricted=False)
    task = env.tasks("test")[0]
    # One second at load, then a wrong answer however many calls the tests make.
    slow = fenced(
        f"import time\ntime.sleep(1.0)\ndef {task['entry_point']}(*args, **kwargs):\n    return None\n"
    )
    completions = [slow] * 12  # 12 s of work on 2 one-CPU actors
    scorer = RayScorer(env, address=cluster.address, chunk_size=1, in_flight=1)
    rewards = EnvRewards(env, num_generations=4, timeout_s=2.5, scorer=scorer)
    logged: dict = {}
    try:
        # Warm: each actor's sandbox worker is up before the clock starts (a cold start under
        # load can take longer than the whole budget).
        quick = fenced(f"def {task['entry_point']}(*args, **kwargs):\n    return None\n")
        assert None not in scorer.score([quick] * 2, [task] * 2, timeout_s=120)
        started = time.monotonic()
        (reward,) = rewards.functions()
        got = reward(
            prompts=[0] * 12,
            completions=completions,
            task_split=["test"] * 12,
            task_index=[0] * 12,
            log_metric=logged.__setitem__,
        )
        took = time.monotonic() - started
    finally:
        rewards.close()
    verdicts = rewards.verdicts(completions, ["test"] * 12, [0] * 12)  # the batch's, cached
    scored = [v for v in verdicts if v is not None]
    assert 0 < len(scored) < len(verdicts), [None if v is None else v.reason for v in verdicts]
    assert all(v.reason.value == "wrong_answer" for v in scored)  # each ran to its end, then failed
    assert got == [None if v is None else 0.0 for v in verdicts]  # unscored is None, never 0
    assert logged["verifier/unscored"] == len(verdicts) - len(scored)
    assert took < 2.5 + bound(1.5), f"the batch overran its budget: {took:.1f} s"
    assert scorer.stats["unscored_items"] == len(verdicts) - len(scored)


def test_one_slow_item_costs_only_itself_not_its_neighbours_or_the_next_batch(cluster):
    """An item that keeps an actor busy past the budget once left the chunks queued behind
    it unscored, and the next batch was dealt to the busy actor. Now the queued chunks run again
    on the idle actor, the busy actor gets nothing while the other is free, and a 10 MB
    completion is bad_format at the driver (never shipped)."""
    if not HUMANEVAL.exists():
        pytest.skip(f"offline HumanEval copy not found at {HUMANEVAL}")
    from rlvr_gym.verifiers.code.sandbox import Limits

    # restricted=False: RestrictedPython would refuse `import time` before the sandbox runs it.
    env = envs.make("humaneval", data_path=HUMANEVAL, limits=Limits(wall_s=12.0), restricted=False)
    task = env.tasks("test")[0]
    slow = fenced(f"import time\ntime.sleep(9)\ndef {task['entry_point']}(*a, **k):\n    return None\n")
    right = env.reference_completion(task)
    scorer = RayScorer(env, address=cluster.address, chunk_size=1, in_flight=2)
    try:
        assert None not in scorer.score([right] * 4, [task] * 4, timeout_s=120)  # both actors warm
        first = scorer.score([slow, *[right] * 7, "x" * 10_000_000], [task] * 9, timeout_s=3.0)
        assert first[0] is None  # the slow item alone is unscored
        assert [v.passed for v in first[1:8]] == [True] * 7, first
        assert first[8].reason.value == "bad_format" and "over the scorer's" in first[8].details["why"]
        second = scorer.score([right] * 16, [task] * 16, timeout_s=4.0)  # the slow item still runs
        assert None not in second and all(v.passed for v in second)
    finally:
        scorer.close()


def test_a_slow_item_costs_only_itself_not_the_rest_of_its_chunk(cluster):
    """A slow item once held its whole chunk past the budget (8 items on one actor, all left
    unscored). Now the actor scores its chunk item by item in a worker process it can kill: the
    slow item is its own ``timeout`` (score 0), the seven others of its chunk are scored."""
    from rlvr_gym.verifiers import Rubric
    from tests.support.slow_checks import REGEX_BOMB, HostileToItsChecks

    env = envs.make("arith")
    env.rubric = Rubric({"correct": HostileToItsChecks()})
    tasks = [env.tasks("train")[i] for i in range(8)]
    completions = [f"<answer>{t['answer']}</answer>" for t in tasks]
    completions[2] = REGEX_BOMB  # ~11 s of backtracking, the GIL held
    root = str(Path(__file__).resolve().parents[3])  # the actors load tests.support.slow_checks
    scorer = RayScorer(
        env,
        address=cluster.address,
        chunk_size=8,
        item_timeout_s=0.5,
        runtime_env={"env_vars": {"PYTHONPATH": root}},
    )
    try:
        assert None not in scorer.score(completions[:2], tasks[:2], timeout_s=60)  # warm
        started = time.monotonic()
        got = scorer.score(completions, tasks, timeout_s=6.0)
        took = time.monotonic() - started
    finally:
        scorer.close()
    assert None not in got, got
    assert [v.reason.value for v in got] == ["correct"] * 2 + ["timeout"] + ["correct"] * 5
    assert got[2].score == 0.0
    assert took < bound(6.0), took


def test_a_node_without_the_hosts_sandbox_layers_is_refused(cluster):
    env = envs.make("arith")
    # The actors build their sandboxes without namespaces, as on a host that has none.
    with pytest.raises(WallsMissingError, match="lacks sandbox layers this host has: .*network namespace"):
        RayScorer(env, address=cluster.address, runtime_env={"env_vars": {NO_NAMESPACES_ENV: "1"}})
    assert not ray.is_initialized()  # the failed scorer left no connection behind


def test_sandbox_info_prints_every_layer_of_every_node(cluster, capsys):
    from rlvr_gym.trainers.cli import main
    from rlvr_gym.verifiers.code.sandbox import LAYERS

    assert main(["sandbox-info", "--ray-address", cluster.address]) == 0
    lines = capsys.readouterr().out.splitlines()
    nodes = [i for i, line in enumerate(lines) if line.startswith("node ")]
    assert len(nodes) == 2  # the two CPU nodes; the head scores nothing
    for start in nodes:
        assert [line.split()[0] for line in lines[start + 1 : start + 1 + len(LAYERS)]] == list(LAYERS)
        assert "IPC namespace" in lines[start + 1 + list(LAYERS).index("ipc")]


def rewards_of(rewards) -> list[list[float | None]]:
    """Every component's rewards for one right and one wrong answer to two tasks."""
    env = rewards.env
    completions = [env.reference_completion(env.tasks("train")[i]) for i in (0, 1)] + [
        "<answer>-1</answer>"
    ] * 2
    columns = dict(
        prompts=[0] * 4, completions=completions, task_split=["train"] * 4, task_index=[0, 1, 0, 1]
    )
    return [f(**columns) for f in rewards.functions()]


def test_eval_audit_and_training_rewards_score_through_ray(cluster, tmp_path):
    from rlvr_gym.envs.audit import audit
    from rlvr_gym.trainers.evaluate import evaluate

    env = envs.make("arith")

    class Reference:
        engine = "scripted"

        def sample(self, prompt, n, seed):
            task = next(t for t in env.tasks("test") if env.prompt(t) == prompt)
            return [env.reference_completion(task), "<answer>-1</answer>"][:n]

    def run_eval(scoring: str, folder: str) -> dict:
        result = evaluate(
            env,
            "m",
            n=2,
            limit=4,
            output_dir=tmp_path / folder,
            sampler=Reference(),
            progress=False,
            scoring=scoring,
            ray_address=cluster.address if scoring == "ray" else None,
        )
        summary = result.summary
        assert summary["this_session"]["scoring"]["scorer"] == scoring
        return {k: v for k, v in summary.items() if k != "this_session"}

    assert run_eval("ray", "ray") == run_eval("local", "local")
    report = json.loads((tmp_path / "ray" / "summary.json").read_text())["this_session"]["scoring"]
    assert report["nodes"] == 2 and report["lost_nodes"] == 0 and report["rerun_items"] == 0
    scorer = make_scorer(env, "ray", ray_address=cluster.address)
    try:
        remote = audit(env, n_tasks=2, fast=True, score=scored_by(scorer)).to_dict()
        got = rewards_of(EnvRewards(env, num_generations=2, scorer=scorer))
    finally:
        scorer.close()
    local = audit(env, n_tasks=2, fast=True).to_dict()
    for report in (remote, local):
        report.pop("seconds")
        for family in report["families"].values():
            for timing in ("slowest_s", "mean_seconds"):  # wall-clock figures, not verdicts
                family.pop(timing, None)
    differing = {
        name: (family, local["families"].get(name))
        for name, family in remote["families"].items()
        if family != local["families"].get(name)
    }
    assert remote == local, differing or remote
    assert got == rewards_of(EnvRewards(env, num_generations=2))


def test_serve_scores_every_env_it_hosts_on_one_cluster(cluster):
    """``rlvr-gym serve arith gsm8k --scoring ray``: each env's scorer has an actor on both 1-CPU
    nodes (a share of their CPUs) and the batch endpoint scores on Ray for both. Before, the first
    env's actors took every CPU, the second env's never started and the server refused to start
    (after 120 s, saying no node had a free CPU)."""
    pytest.importorskip("openenv", reason="serving needs rlvr-gym[openenv]")
    import urllib.request

    from rlvr_gym.backends.serve import ServeOptions, create_server, running

    options = ServeOptions(scoring="ray", ray_address=cluster.address)
    with running(["arith", "gsm8k"], options=options) as base:
        for env_id in ("arith", "gsm8k"):
            env = envs.make(env_id)
            tasks = env.tasks("test")
            completions = [env.reference_completion(tasks[i]) if i % 2 == 0 else "no idea" for i in range(8)]
            body = {"completions": completions, "labels": [{"split": "test", "index": i} for i in range(8)]}
            request = urllib.request.Request(
                f"{base}/{env_id}/score", json.dumps(body).encode(), {"content-type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=bound(60)) as response:
                verdicts = json.loads(response.read())["verdicts"]
            assert [v["passed"] for v in verdicts] == [i % 2 == 0 for i in range(8)], env_id
        # The two envs' shares fill the nodes' CPUs exactly: a driver wanting more is told why.
        with pytest.raises(ClusterUnreachableError, match="could be placed .* CPUs are taken"):
            RayScorer(envs.make("arith"), address=cluster.address, start_timeout_s=2, check_walls=False)
    # Its envs' scorers shared one connection and the last one ended it: none connected anew
    # (Ray's auto-connect: to whichever cluster it finds on the machine, or a new one).
    assert not ray.is_initialized(), "closing the server's scorers made Ray connect again"
    # A server that cannot host one of its envs frees the actors of the envs made before it.
    with pytest.raises(UnknownEnvError):
        create_server(["arith", "no-such-env"], options=options)
    connect(cluster.address)
    try:
        deadline = time.monotonic() + bound(15)
        while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ray.available_resources().get("CPU", 0) == 2, "arith's actors outlived the failed start"
    finally:
        ray.shutdown()


def test_an_unreachable_cluster_is_one_line_at_once():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(
        ClusterUnreachableError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"
    ) as caught:
        make_scorer(envs.make("arith"), "ray", ray_address=f"127.0.0.1:{port}")
    assert "\n" not in str(caught.value) and time.monotonic() - started < bound(10)


def ray_pids() -> set[int]:
    """Our Ray processes: everything descending from this test process (the simulated nodes'
    GCS, raylets and workers are its children), itself included."""
    from tests.support.code import _ours

    return {int(p) for p in os.listdir("/proc") if p.isdigit() and _ours(int(p))}


BEFORE_RAY: set[str] = set()
"""This process's own sockets from before the cluster started: not Ray's, so not checked here."""


def sockets_of(pid: int) -> set[str]:
    table = subprocess.run(["ss", "-tnpaH"], capture_output=True, text=True, check=True).stdout
    return {" ".join(line.split()[3:5]) for line in table.splitlines() if f"pid={pid}," in line}


def test_every_ray_socket_is_on_loopback(cluster):
    env = envs.make("arith")
    scorer = RayScorer(env, address=cluster.address)
    try:
        scorer.score(["<answer>1</answer>"] * 4, [env.tasks("test")[0]] * 4)
        nodes = ray.nodes()
        pids = ray_pids()
        table = subprocess.run(["ss", "-tnpaH"], capture_output=True, text=True, check=True).stdout
    finally:
        scorer.close()
    assert {n["NodeManagerAddress"] for n in nodes} == {LOOPBACK}
    ours = [
        line
        for line in table.splitlines()
        if any(f"pid={pid}," in line for pid in pids)
        and not (f"pid={os.getpid()}," in line and " ".join(line.split()[3:5]) in BEFORE_RAY)
    ]
    assert len(ours) > 10, "found none of Ray's sockets: the check would prove nothing"
    for line in ours:
        local, peer = line.split()[3:5]
        for address in (local, peer):
            host = address.rsplit(":", 1)[0].strip("[]").removeprefix("::ffff:")
            assert host in (LOOPBACK, "*", "0.0.0.0") and (host == LOOPBACK or address is peer), line
