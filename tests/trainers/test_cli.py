import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr_gym import envs
from rlvr_gym.trainers.cli import build_parser, main


def test_envs_lists_ids_with_descriptions(capsys):
    assert main(["envs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("arith-v0 ") and "arithmetic" in line for line in lines)
    assert len(lines) == len(envs.registry)


def test_check_reports_each_env(capsys):
    assert main(["check", "arith", "--n-tasks", "2", "--env-arg", "num_steps=3"]) == 0
    assert capsys.readouterr().out.startswith("ok   arith: spaces, reset")


def test_verify_prints_the_verdict(capsys):
    task = envs.make("arith").tasks("test")[5]
    assert (
        main(
            [
                "verify",
                "arith",
                "--split",
                "test",
                "--index",
                "5",
                "--completion",
                f"<answer>{task['answer']}</answer>",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["passed"] is True
    assert main(["verify", "arith", "--index", "5", "--completion", "<answer>-1</answer>"]) == 0
    assert "passed=False reason=wrong_answer answer='-1'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check"], "name at least one env id"),
        (["check", "arihh"], "Did you mean 'arith'?"),
        (["check", "arith", "--env-arg", "max_operan=2"], "did you mean 'max_operand'?"),
        (["check", "arith", "--env-arg", "oops"], "key=value"),
        (["verify", "arith", "--index", "-4", "--completion", "x"], "out of range"),
        (["verify", "arith", "--index", "0", "--split", "dev", "--completion", "x"], "unknown split 'dev'"),
    ],
)
def test_errors_are_one_line_with_a_nonzero_exit(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlvr-gym: error: ") and message in err and err.count("\n") == 1


def test_console_script_is_installed_and_fails_cleanly():
    script = shutil.which("rlvr-gym", path=str(Path(sys.executable).parent))
    assert script, "the rlvr-gym console script is not installed next to this Python"
    ok = subprocess.run([script, "envs"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "arith" in ok.stdout
    bad = subprocess.run(
        [script, "verify", "nope", "--index", "0", "--completion", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1


LOCAL_ENV_MODULE = '''
from rlvr_gym import envs
from rlvr_gym.verifiers import ExactMatch, Rubric


class Echo(envs.SingleTurnEnv):
    """Repeat the word (a local, unpackaged env)."""

    def __init__(self, **options):
        super().__init__(**options)
        self.rubric = Rubric({"correct": ExactMatch("word")})

    def load_tasks(self, split):
        return [{"word": w} for w in ("alpha", "beta", "gamma")]

    def question(self, task):
        return f"Say {task['word']}."

    def reference_completion(self, task):
        return task["word"]


envs.register("my-org/foo-v0", Echo)
'''


def test_check_imports_a_local_env_module(tmp_path, monkeypatch, capsys):
    module = f"my_env_module_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(LOCAL_ENV_MODULE)
    monkeypatch.chdir(tmp_path)
    assert "my-org/foo-v0" not in envs.registry
    assert main(["check", "my-org/foo-v0"]) == 2  # unknown without the import
    try:
        assert main(["check", "--import", module, "my-org/foo-v0"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("ok   my-org/foo-v0:") and "spec" in out and "close" in out
    finally:
        envs.deregister("my-org/foo-v0")
        sys.modules.pop(module, None)
    assert main(["check", "--import", "no_such_module_xyz", "arith"]) == 2
    assert "--import no_such_module_xyz" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--env", "arith", "--model", "/does/not/exist"], "no such folder"),
        (["eval", "--env", "arith", "--model", "/does/not/exist"], "no such folder"),
        (["check", "arith", "--n-tasks", "0"], "--n-tasks must be >= 1"),
        (["check", "arith", "--n-tasks", "-3"], "--n-tasks must be >= 1"),
        (
            ["eval", "--env", "arith", "--model", "/does/not/exist", "--temperature", "0", "--n", "4"],
            "greedy",
        ),
        (
            ["eval", "--env", "arith", "--model", "/does/not/exist", "--max-retries", "3"],
            "--max-retries: for --engine openai only",
        ),
    ],
)
def test_user_errors_are_one_line_exit_2_and_leave_nothing_behind(argv, message, capsys, tmp_path):
    out = tmp_path / "out"
    if argv[0] in ("train", "eval"):
        argv = [*argv, "--output-dir", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlvr-gym: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()  # nothing half-made that could refuse the corrected retry


def test_eval_takes_k_as_the_readme_writes_it():
    parse = build_parser().parse_args
    assert parse(["eval", "--env", "arith", "--k", "1", "4"]).k == [1, 4]
    assert parse(["eval", "--env", "arith", "--k", "1", "--k", "4"]).k == [1, 4]


def test_check_env_refuses_a_task_count_below_one():
    from rlvr_gym.error import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="n_tasks"):
        envs.check_env(envs.make("arith"), n_tasks=0)


def test_eval_flags_are_eval_config_s_fields_and_their_defaults():
    """The eval command's flags are made from EvalConfig's fields (as train's are from
    RunConfig's) and OpenAISampler's annotated parameters: each has its flag, and only typed
    flags reach the config (the dataclass's own defaults fill the rest)."""
    from rlvr_gym.backends.config import RunConfig
    from rlvr_gym.trainers.eval_config import EvalConfig
    from rlvr_gym.trainers.flags import flag_of, given, params_of
    from rlvr_gym.trainers.openai_engine import OpenAISampler

    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    eval_parser = subcommands.choices["eval"]
    options = {s for action in eval_parser._actions for s in action.option_strings}
    for source in (EvalConfig, OpenAISampler.__init__):
        for param in params_of(source):
            assert flag_of(param) in options, flag_of(param)
    assert {"--n", "--k", "--batch-rollouts", "--no-progress", "--request-timeout", "--engine"} <= options
    argv = [
        "eval",
        "--env",
        "arith",
        "--n",
        "8",
        "--no-progress",
        "--batch-rollouts",
        "4",
        "--engine",
        "openai",
    ]
    args = parser.parse_args(argv)
    assert given(args, EvalConfig) == {"n": 8, "progress": False, "batch_rollouts": 4, "engine": "openai"}
    assert EvalConfig(**given(args, EvalConfig)).ks == [1, 8]  # --k's default: 1 and n
    helps = {a.dest: a.help for a in eval_parser._actions}
    train_parser = subcommands.choices["train"]
    assert helps["scoring"] == {a.dest: a.help for a in train_parser._actions}["scoring"]
    assert EvalConfig().scoring == RunConfig().scoring and "(default: 4)" in helps["n"]


def test_evaluate_takes_an_eval_config_and_refuses_what_it_cannot_run(tmp_path):
    """``evaluate()``'s settings are EvalConfig's: a config object, its fields by name on top, and
    clear refusals (an unknown setting, k above n, openai without its sampler) before any load."""
    from rlvr_gym.error import InvalidArgumentError
    from rlvr_gym.trainers.eval_config import EvalConfig
    from rlvr_gym.trainers.evaluate import evaluate

    with pytest.raises(InvalidArgumentError, match="unknown eval settings \\['nn'\\]"):
        evaluate("arith", "m", EvalConfig(n=2), nn=3)
    with pytest.raises(InvalidArgumentError, match="k must be integers in \\[1, n=2\\]"):
        evaluate("arith", "m", EvalConfig(n=2), k=[1, 4])
    with pytest.raises(InvalidArgumentError, match="engine 'openai' needs its sampler"):
        evaluate("arith", "m", EvalConfig(engine="openai"), output_dir=tmp_path)
    assert not any(tmp_path.iterdir())
    assert EvalConfig(k=4).k == (4,) and EvalConfig(n=1).ks == [1]
    assert EvalConfig().split_of(("train",)) == "train" and EvalConfig().split_of(("train", "test")) == "test"


def test_sandbox_info_prints_every_layer_here_and_for_a_ray_node(capsys):
    """One list of sandbox layers: the isolation report, the walls each Ray node's actor reports
    and both ``sandbox-info`` printouts follow it (the per-node one once lacked the IPC wall)."""
    from rlvr_gym.backends.scoring.ray import walls_here
    from rlvr_gym.trainers.cli import print_layers
    from rlvr_gym.verifiers.code.sandbox import LAYERS, Isolation

    assert list(Isolation().as_dict())[: len(LAYERS)] == list(LAYERS)
    walls = walls_here()  # what every node's first scoring actor sends the driver
    assert "error" not in walls and set(LAYERS) <= walls.keys()
    print_layers(walls, indent="  ")
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[: len(LAYERS)]] == list(LAYERS)
    assert lines[list(LAYERS).index("ipc")] == f"  {'ipc':<11} {walls['ipc']}"
