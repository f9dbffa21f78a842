"""The CLI is made from RunConfig: the same inputs give the same run, every field has its flag,
the env is named in one place, and backend options are typed."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from pathlib import Path

import pytest

from rlvr_gym import backends
from rlvr_gym.backends import config as config_module
from rlvr_gym.backends.config import LoraSettings, RunConfig
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.trainers.cli import build_parser, main

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

FIELDS = dataclasses.fields(RunConfig)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from rlvr_gym import envs
    from rlvr_gym.trainers.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"), envs.make("arith"))


def train_actions() -> dict[str, object]:
    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    return {a.dest: a for a in sub.choices["train"]._actions}


def saved_config(run_dir: Path) -> dict:
    saved = json.loads((run_dir / "config.json").read_text())
    saved.pop("output_dir")
    return saved


@pytest.mark.slow
def test_the_cli_and_the_python_api_record_the_same_run(tmp_path, tiny_model, capsys):
    """``rlvr-gym train --model X`` once trained at lr 1e-6 while ``train(RunConfig(model=X))``
    used 1e-5. One real step each way; both record the run in config.json."""
    from rlvr_gym.trainers.train import train

    model = str(tiny_model)
    cli_dir, api_dir = tmp_path / "cli", tmp_path / "api"
    small = dict(max_steps=1, num_generations=2, prompts_per_step=1, max_completion_length=4)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in small.items()]
    argv = ["train", "--env", "arith", "--model", model, "--output-dir", str(cli_dir), "--no-audit", *flags]
    assert main(argv) == 0
    train("arith", RunConfig(model=model, output_dir=str(api_dir), **small), audit=False)
    assert saved_config(cli_dir) == saved_config(api_dir)
    assert saved_config(cli_dir)["learning_rate"] == RunConfig().learning_rate


def test_every_run_config_field_has_one_flag_with_the_dataclass_help_and_default():
    from rlvr_gym.trainers.cli import run_config
    from rlvr_gym.trainers.flags import flag_of

    actions = train_actions()
    for field in FIELDS:
        assert field.name in actions, f"RunConfig.{field.name} has no rlvr-gym train flag"
        action = actions[field.name]
        assert flag_of(field) in action.option_strings
        assert action.help.startswith(field.metadata["help"]), field.name
    # No flag typed: exactly RunConfig's own defaults (the env named, a model given).
    args = build_parser().parse_args(["train", "--env", "arith", "--model", "m"])
    assert run_config(args) == RunConfig(env_id="arith", model="m")


def other_value(field: dataclasses.Field, hint) -> tuple[list[str], object]:
    """Flag arguments setting ``field`` to something other than its default, and that value."""
    default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if origin is not None and origin is not typing.Literal and len(args) == 1 else hint
    if field.name == "lora":
        return ["8"], LoraSettings(r=8)
    if field.name == "report_to":
        return ["tensorboard"], ("tensorboard",)
    if field.name == "audit_skip":
        return ["equivalent"], ("equivalent",)
    if field.name == "env_kwargs":
        return ["max_operand=7"], {"max_operand": 7}
    if base is bool:
        return [], not default
    if typing.get_origin(base) is typing.Literal:
        value = next(c for c in typing.get_args(base) if c != default)
        return [value], value
    if base is int:
        value = (default or 1) + 1
        return [str(value)], value
    if base is float:
        value = 0.25 if default != 0.25 else 0.5
        return [str(value)], value
    return ["x-value"], "x-value"


@pytest.mark.parametrize("field", FIELDS, ids=[f.name for f in FIELDS])
def test_each_flag_sets_its_field(field):
    from rlvr_gym.trainers.cli import run_config
    from rlvr_gym.trainers.flags import flag_of

    hint = typing.get_type_hints(RunConfig)[field.name]
    values, expected = other_value(field, hint)
    flag = flag_of(field)
    if values == [] and expected is False:
        flag = "--no-" + flag.removeprefix("--")
    argv = ["train", "--env", "arith", "--model", "m"]
    if field.name not in ("env_id", "model"):
        argv += [flag, *values]
        if field.name == "ray_address":  # only meaningful (and only accepted) with Ray scoring
            argv += ["--scoring", "ray"]
    else:
        argv = ["train", "--env", "gsm8k", "--model", "x-value"]
        expected = {"env_id": "gsm8k", "model": "x-value"}[field.name]
    config = run_config(build_parser().parse_args(argv))
    assert getattr(config, field.name) == expected


def test_without_a_model_the_cli_runs_the_demo_and_flags_still_win():
    from rlvr_gym.trainers.cli import run_config
    from rlvr_gym.trainers.demo import TINY_DEMO, demo_config

    args = build_parser().parse_args(
        ["train", "--env", "arith", "--learning-rate", "0.5", "--env-arg", "max_operand=9"]
    )
    config = run_config(args)
    assert config == demo_config("arith", learning_rate=0.5, env_kwargs={"max_operand": 9})
    assert config.max_steps == TINY_DEMO["max_steps"] and config.env_kwargs["operations"] == "+"
    # The demo is the trainers' business: the backend-neutral config module holds no demo.
    assert not hasattr(config_module, "TINY_DEMO") and not hasattr(config_module, "TINY_DEMO_ENV")


def test_the_env_is_named_in_one_place(tmp_path):
    from rlvr_gym import envs
    from rlvr_gym.trainers.train import resolve_env, train

    missing = str(tmp_path / "no-model")
    with pytest.raises(InvalidArgumentError, match="config.env_id is 'arith'"):
        train("gsm8k", RunConfig(env_id="arith", model=missing, output_dir=str(tmp_path / "run")))
    with pytest.raises(InvalidArgumentError, match="config.env_id is 'gsm8k'"):
        train(envs.make("arith"), RunConfig(env_id="gsm8k", model=missing))
    with pytest.raises(InvalidArgumentError, match="env_kwargs"):
        train(envs.make("arith"), RunConfig(env_kwargs={"max_operand": 3}, model=missing))
    with pytest.raises(InvalidArgumentError, match="no env named"):
        train(config=RunConfig(model=missing))
    assert not (tmp_path / "run").exists()
    # Named once, either way, it is the same run; "arith" and "arith-v0" are one env.
    env, config = resolve_env(None, RunConfig(env_id="arith", env_kwargs={"max_operand": 3}))
    assert env.id == "arith-v0" and env.spec.kwargs["max_operand"] == 3 and config.output_dir == "runs/arith"
    env, config = resolve_env(envs.make("arith"), RunConfig(env_id="arith-v0"))
    assert config.env_id == "arith-v0" and config.output_dir == "runs/arith-v0"


def test_a_backend_option_is_typed_and_refused_where_it_does_not_apply(tmp_path, tiny_model, capsys):
    from rlvr_gym.trainers.cli import backend_options
    from rlvr_gym.trainers.train import train

    missing = str(tmp_path / "no-model")
    # Once silently dropped: --vllm-mode with the trl backend trained as if it was not given.
    argv = ["train", "--env", "arith", "--backend", "trl", "--vllm-mode", "colocate", "--model", missing]
    assert main(argv) == 2
    assert "--vllm-mode apply to --backend fsdp-vllm, not 'trl'" in capsys.readouterr().err
    # An alias shares its backend's options.
    args = build_parser().parse_args(
        ["train", "--env", "arith", "--backend", "fsdp", "--vllm-mode", "colocate"]
    )
    assert backend_options(args) == {"mode": "colocate"}
    with pytest.raises(InvalidArgumentError, match=r"backend 'trl' takes no option \['mode'\]"):
        train("arith", RunConfig(model=str(tiny_model)), backend="trl", backend_options={"mode": "colocate"})


@pytest.mark.parametrize("name", ["trl", "deepspeed-zero2", "fsdp-vllm"])
def test_each_backends_options_are_its_train_keywords_with_the_same_defaults(name):
    try:
        module = backends.get(name)
    except ImportError as exc:  # pragma: no cover - a backend's module imports only what it needs
        pytest.skip(str(exc))
    signature = inspect.signature(module.train).parameters
    for field in dataclasses.fields(module.Options):
        assert field.name in signature, f"{name}: Options.{field.name} is not a train() keyword"
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        declared = signature[field.name].default
        assert declared == default or (declared is None and default == type(default)()), (name, field.name)
