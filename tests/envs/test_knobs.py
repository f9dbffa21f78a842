"""Env knobs are typed by their annotations: "False" switches a bool knob off, junk is refused."""

from __future__ import annotations

from typing import Literal

import pytest

import rlvr_gym as rg
from rlvr_gym.trainers.cli import main


@pytest.mark.parametrize("text", ["False", "false", "no", "off", "0", False, 0])
def test_a_bool_knob_given_as_false_text_is_false(text):
    env = rg.make("arith", word_problems=text)
    assert env.spec.kwargs["word_problems"] is False
    prompt = env.prompt(env.tasks("test")[0])[-1]["content"]
    assert prompt == rg.make("arith", word_problems=False).prompt(env.tasks("test")[0])[-1]["content"]


def test_int_and_float_knobs_convert_from_text_and_junk_is_refused():
    env = rg.make("arith", num_steps="3", proximity_weight="0.25")
    assert env.spec.kwargs["num_steps"] == 3 and env.spec.kwargs["proximity_weight"] == 0.25
    with pytest.raises(rg.Error, match=r"word_problems='maybe' is not a bool \(true or false\)"):
        rg.make("arith", word_problems="maybe")
    with pytest.raises(rg.Error, match="num_steps='two' is not an int"):
        rg.make("arith", num_steps="two")
    with pytest.raises(rg.Error, match="num_steps=2.5 is not an int"):
        rg.make("arith", num_steps=2.5)
    with pytest.raises(rg.Error, match="prompt_format='yaml' is not one of 'chat', 'text'"):
        rg.make("arith", prompt_format="yaml")


def test_reasoning_gym_hardened_false_is_off():
    env = rg.make("reasoning_gym/basic_arithmetic", hardened="False", train_size=4, test_size=4)
    assert env.hardened is False and env.spec.kwargs["hardened"] is False


def test_conversion_rules():
    from rlvr_gym.envs.knobs import _NotConvertible, convert, describe

    assert convert("none", float | None) is None
    assert convert("none", str | None) == "none"
    assert convert("7", int | None) == 7
    assert convert(1, bool) is True
    assert convert("text", Literal["chat", "text"]) == "text"
    with pytest.raises(_NotConvertible):
        convert(2, bool)
    assert describe(float | None) == "a number or None"


def test_cli_env_arg_false_is_applied_and_printed(capsys, tmp_path):
    out = tmp_path / "audit.json"
    code = main(
        [
            "audit",
            "arith",
            "--env-arg",
            "word_problems=False",
            "--n-tasks",
            "1",
            "--fast",
            "--output",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert '"word_problems": false' in printed  # the audit's header names the settings applied
    assert '"word_problems": false' in out.read_text()
    assert (
        main(["verify", "arith", "--index", "0", "--completion", "x", "--env-arg", "word_problems=maybe"])
        == 2
    )
    err = capsys.readouterr().err
    assert "word_problems='maybe' is not a bool" in err and len(err.strip().splitlines()) == 1
