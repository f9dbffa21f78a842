"""Scoring backends without a cluster: the choice, the refusals, and that ``local`` never needs Ray."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.scoring import make_scorer
from rlvr_gym.backends.scoring.ray import (
    WallsMissingError,
    check_walls,
    declared_cpus,
    plan_chunks,
    walls_here,
)
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.code import SandboxPool


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_and_a_local_run_never_import_ray():
    done = run_python(
        "import sys, rlvr_gym\n"
        "from rlvr_gym import envs\n"
        "from rlvr_gym.trainers import cli\n"
        "from rlvr_gym.trainers.evaluate import evaluate\n"
        "from rlvr_gym.backends.rewards import EnvRewards\n"
        "from rlvr_gym.envs.audit import audit\n"
        "from rlvr_gym.backends.scoring import make_scorer, scored_by\n"
        "cli.build_parser()\n"
        "env = envs.make('arith')\n"
        "scorer = make_scorer(env, 'local')\n"
        "task = env.tasks('test')[0]\n"
        "assert scorer.score([env.reference_completion(task)], [task])[0].passed\n"
        "assert audit(env, n_tasks=1, fast=True, score=scored_by(scorer)).ok\n"
        "print('ray' in sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


RAY_ABSENT = "import sys; sys.modules['ray'] = None  # import ray -> ImportError, as without the extra\n"


def test_ray_absent_is_a_clear_error_from_the_api_and_the_cli():
    done = run_python(
        RAY_ABSENT + "from rlvr_gym import envs\n"
        "from rlvr_gym.backends.scoring import make_scorer\n"
        "from rlvr_gym.error import NotAvailableError\n"
        "try:\n"
        "    make_scorer(envs.make('arith'), 'ray', ray_address='127.0.0.1:6379')\n"
        "except NotAvailableError as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "scoring='ray' needs Ray: pip install 'rlvr-gym[ray]' (ray 2.60) here and on every node"
    )
    cli = run_python(
        RAY_ABSENT + "from rlvr_gym.trainers.cli import main\n"
        "sys.exit(main(['audit', 'arith', '--fast', '--scoring', 'ray', '--ray-address', '127.0.0.1:6379']))\n"
    )
    assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
    assert cli.stderr.strip().splitlines() == [
        "rlvr-gym: error: scoring='ray' needs Ray: pip install 'rlvr-gym[ray]' (ray 2.60) here and on every node"
    ]


def test_the_scoring_choice_is_validated():
    assert RunConfig(scoring="ray", ray_address="10.0.0.5:6379").scoring == "ray"
    with pytest.raises(InvalidArgumentError, match="unknown scorer 'dask'"):
        RunConfig(scoring="dask")
    with pytest.raises(InvalidArgumentError, match="ray_address is for scoring='ray'"):
        RunConfig(ray_address="10.0.0.5:6379")
    with pytest.raises(InvalidArgumentError, match="unknown scorer"):
        make_scorer(None, "dask")  # type: ignore[arg-type]


def test_scorers_sharing_a_cluster_declare_their_share_of_each_actors_cpus():
    assert declared_cpus(1, 1) == 1 and declared_cpus(2, 2) == 1.0 and declared_cpus(1, 2) == 0.5
    assert 3 * declared_cpus(1, 3) <= 1  # rounded down to Ray's unit: never more than the node has
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InvalidArgumentError, match="shared_by must be an integer >= 1"):
            declared_cpus(1, bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="cannot share"):
        declared_cpus(1, 20_000)


def test_chunks_follow_task_groups_and_cover_every_item_once_in_order():
    tasks = [{"q": q} for q in "aaaabbbbccccccccccd"]  # groups of 4, 4, 10, 1
    chunks = plan_chunks(tasks, 4)
    assert [i for chunk in chunks for i in chunk] == list(range(len(tasks)))
    assert chunks[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # a group that fits stays on one actor
    assert all(len(c) <= 4 for c in chunks)
    assert plan_chunks(tasks, 8)[0] == [0, 1, 2, 3, 4, 5, 6, 7]  # small groups share a chunk
    assert plan_chunks([], 4) == []


def test_a_node_missing_a_layer_the_driver_has_is_refused():
    here = walls_here()
    check_walls(here, here, "same")  # equal walls pass
    with SandboxPool(1, namespaces=False) as pool:  # the walls of a host without namespaces
        weaker = {"missing": list(pool.isolation["missing"])}
    if set(weaker["missing"]) <= set(here["missing"]):
        pytest.skip("this host has no namespaces either: nothing weaker to compare against")
    with pytest.raises(WallsMissingError, match="node n1 lacks sandbox layers this host has: .*network namespace"):
        check_walls(here, weaker, "n1")
    check_walls(weaker, here, "n2")  # a node with more walls than the driver is fine


def test_train_with_an_unreachable_cluster_stops_in_one_line_before_any_model(tmp_path, capsys):
    import socket

    from rlvr_gym.trainers.cli import main

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    out = tmp_path / "run"
    argv = ["train", "--env", "arith", "--output-dir", str(out), "--scoring", "ray", "--ray-address", address]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("rlvr-gym: error: ") and (
        "cannot reach the Ray cluster" in line or "needs Ray" in line
    )
    assert not (out / "tiny-model").exists() and not (out / "config.json").exists()  # nothing loaded or built
