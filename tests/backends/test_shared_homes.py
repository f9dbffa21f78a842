"""One home for each fact the backends share (issue 23): the rollout log's writer, a finished
run's step count, "run here or launch ranks", and no private calls across module lines."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

from rlvr_gym import envs
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.protocol import run_result, steps_done
from rlvr_gym.backends.rollouts import RolloutLog, read_rollouts

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "backends"


def score_one_training_batch(log: Path, step: int) -> None:
    """What TRL does at ``step``: call the env's reward functions on a batch (real EnvRewards)."""
    transformers = pytest.importorskip("transformers", reason="needs rlvr-gym[trl]")
    from rlvr_gym.backends.rewards import EnvRewards

    env = envs.make("arith")
    task = env.tasks("train")[0]
    rewards = EnvRewards(env, num_generations=2, timeout_s=30, rollout_log=log, rollout_every=5)
    try:
        for function in rewards.functions():
            function(
                prompts=[env.prompt(task)] * 2,
                completions=[f"<answer>{task['answer']}</answer>", "<answer>0</answer>"],
                task_split=["train", "train"],
                task_index=[0, 0],
                trainer_state=transformers.TrainerState(global_step=step),
            )
    finally:
        rewards.close()


def test_a_resumed_run_does_not_log_a_training_step_twice(tmp_path):
    """A run resumed from checkpoint-5 samples step 5 again: the one writer keeps one copy
    (the backends' own writer used to append it a second time)."""
    log = tmp_path / "rollouts.jsonl"
    score_one_training_batch(log, step=5)
    with log.open("a") as out:
        out.write('{"step": 10, "split": "tr')  # killed mid-write after the checkpoint
    score_one_training_batch(log, step=5)  # the resumed process
    rows = read_rollouts(log)
    assert [(r["step"], r["sample"]) for r in rows] == [(5, 0), (5, 1)]
    assert log.read_text().endswith("\n") and rows[0]["verdict"]["passed"]
    with RolloutLog(log, duplicates="skip") as rollouts:
        rollouts.truncate(4)
    assert read_rollouts(log) == []


def test_training_and_eval_rollouts_are_one_record_type():
    import importlib

    rewards = importlib.import_module("rlvr_gym.backends.rewards")
    evaluate = importlib.import_module("rlvr_gym.trainers.evaluate")
    for module in (rewards, evaluate):
        source = Path(module.__file__).read_text()
        assert "Rollout(" in source and "RolloutLog(" in source, module.__name__
    assert "json.dumps" not in Path(rewards.__file__).read_text(), (
        "the reward functions write rows themselves"
    )


def test_a_finished_runs_step_count_has_one_home(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    assert steps_done(run) is None
    with pytest.raises(FileNotFoundError, match="did not finish"):
        run_result(run)
    (run / "metrics.jsonl").write_text(json.dumps({"step": 6, "reward/mean": 0.5}) + "\n")
    (run / "trainer_state.json").write_text(json.dumps({"global_step": 7}))
    assert steps_done(run) == 7 and run_result(run).steps == 7  # not the last *logged* step (6)
    # Every backend reads it there; none works it out its own way.
    for path in (
        "backends/trl.py",
        "backends/deepspeed_zero2.py",
        "backends/fsdp_vllm.py",
        "trainers/run_dir.py",
    ):
        name, source = path, (ROOT / path).read_text()
        assert 'rsplit("-"' not in source and "RunResult(" not in source, name


def test_the_report_says_how_far_a_run_got_from_the_same_place(tmp_path):
    pytest.importorskip("matplotlib", reason="needs rlvr-gym[trl]")
    from rlvr_gym.trainers.report import build_report, headline

    run = tmp_path / "run"
    run.mkdir()
    rows = [{"step": 6, "reward/mean": 0.5}]
    (run / "metrics.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert headline(run, rows, None)["steps"] == "6 (1 logged; the run did not finish)"
    (run / "trainer_state.json").write_text(json.dumps({"global_step": 7}))
    assert headline(run, rows, None)["steps"] == "7 (1 logged)"  # not the last *logged* step
    assert "7 (1 logged)" in build_report(run).page.read_text()


def called_names(path: Path) -> set[str]:
    return {
        n.func.id if isinstance(n.func, ast.Name) else n.func.attr
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)
    }


def test_both_distributed_backends_run_here_or_launch_through_one_helper():
    for name in ("deepspeed_zero2.py", "fsdp_vllm.py"):
        calls = called_names(BACKENDS / name)
        assert "run_or_launch" in calls, name
        assert not {"write_job", "run", "command"} & calls, f"{name} launches ranks on its own"


@pytest.mark.slow
def test_run_or_launch_starts_the_ranks_and_reads_back_their_run(tmp_path):
    """A real torchrun of two ranks running a worker module, then the run read from its folder."""
    pytest.importorskip("torch", reason="needs rlvr-gym[trl]")
    from rlvr_gym.backends.engine.launch import LaunchSpec, run_or_launch
    from tests.support.torchrun import free_port

    config = RunConfig(output_dir=str(tmp_path / "run"))
    spec = LaunchSpec(num_processes=2, main_process_port=free_port())
    result = run_or_launch(
        None,
        "tests.support.launch_worker",
        spec,
        in_process=False,
        env=envs.make("arith"),
        config=config,
        model="m",
        resume=False,
        overrides={"seen": True},
    )
    assert result.steps == 3 and result.metrics[0]["step"] == 2
    ranks = [json.loads((tmp_path / "run" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1] == {"env": "arith-v0", "model": "m", "seen": True}
    assert not list((tmp_path / "run" / "launch").iterdir()), "the job file was left behind"


def private_calls_across_modules(path: Path) -> list[str]:
    """``alias._name`` where ``alias`` is an imported module (ours or a library's)."""
    tree = ast.parse(path.read_text())
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                try:
                    is_module = importlib.util.find_spec(full) is not None
                except (ImportError, ValueError):
                    is_module = False
                if is_module:
                    modules[alias.asname or alias.name] = full
    calls = [
        f"{modules[n.value.id]}.{n.attr}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id in modules
        and n.attr.startswith("_")
        and not n.attr.startswith("__")
    ]
    return [call for call in calls if call not in PUBLIC_DESPITE_THE_UNDERSCORE]


PUBLIC_DESPITE_THE_UNDERSCORE = {"os._exit"}  # documented public API (a forked child's exit)


@pytest.mark.parametrize("path", sorted(BACKENDS.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_backend_calls_another_modules_private_names(path):
    assert private_calls_across_modules(path) == []


def test_no_public_helper_in_backends_or_trainers_is_called_by_tests_alone():
    """Tests check what the product runs: ``fsdp_vllm.shard`` was called by a test worker only.
    A name the README, the docs or a module's docstring example shows users counts as used."""
    import re

    folders = ("backends", "trainers", "envs", "verifiers", "rlvr_gym", "examples", "bench")
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    used = {word for page in pages if page.is_file() for word in re.findall(r"\w+", page.read_text())}
    defined: list[tuple[Path, str]] = []
    for path in (p for folder in folders for p in (ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text())
        used.update(re.findall(r"\w+", ast.get_docstring(tree) or ""))  # a module's own usage example
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.asname or node.name.rsplit(".", 1)[-1])
        if path.parts[len(ROOT.parts)] in ("backends", "trainers"):
            defined += [
                (path, n.name)
                for n in tree.body
                if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")
            ]
    unused = [f"{path.relative_to(ROOT)}:{name}" for path, name in defined if name not in used]
    assert unused == []
