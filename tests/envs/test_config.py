"""Typed per-env configs (``envs/config.py``): one frozen dataclass per env family holds its knobs,
their types, defaults, help and checks; ``make``, the CLI, the docs and the run folder read it."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

import rlvr_gym as rg
from rlvr_gym import envs
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.run_layout import CONFIG_FILE, FINAL_DIR
from rlvr_gym.envs.arith import ArithConfig, ArithEnv
from rlvr_gym.envs.config import EnvConfig, config_of, knobs_of, settings_of
from rlvr_gym.envs.countdown import CountdownConfig
from rlvr_gym.envs.ifeval import IFEvalConfig
from rlvr_gym.trainers import run_dir
from rlvr_gym.trainers.cli import main
from rlvr_gym.trainers.train import recorded_config, resolve_env
from rlvr_gym.verifiers import Limits

DOCS = Path(__file__).resolve().parents[2] / "docs" / "catalogue.md"
CONFIGURED = (
    "arith",
    "countdown",
    "gsm8k",
    "math500",
    "ifeval",
    "humaneval",
    "mbpp",
    "mbpp-sample",
    "gsm8k-python",
    "math500-python",
    "humaneval-feedback",
    "reasoning_gym/basic_arithmetic",
)


@pytest.mark.parametrize("env_id", CONFIGURED)
def test_each_family_has_a_frozen_config_whose_every_knob_has_help(env_id):
    config = config_of(envs.spec(env_id).load())
    assert config is not None and issubclass(config, EnvConfig)
    assert config.__dataclass_params__.frozen
    for f in dataclasses.fields(config):
        assert f.metadata.get("help"), f"{config.__name__}.{f.name} has no help"
    # the config's fields are the knobs make accepts, no more
    with pytest.raises(rg.Error, match="unexpected argument 'not_a_knob'|has no knob.*'not_a_knob'"):
        rg.make(env_id, not_a_knob=1)


def test_a_config_object_keywords_and_make_text_build_the_same_config():
    config = ArithConfig(num_steps=3, word_problems=False)
    assert ArithEnv(config).env_config == config
    assert ArithEnv(num_steps=3, word_problems=False).env_config == config
    assert rg.make("arith", num_steps="3", word_problems="false").env_config == config
    assert ArithEnv(config, max_operand=9).env_config == dataclasses.replace(config, max_operand=9)
    assert ArithConfig(num_steps="4").num_steps == 4  # text is typed by the field, made by hand too
    with pytest.raises(rg.Error, match="unexpected argument 'num_step'; did you mean 'num_steps'"):
        ArithEnv(num_step=3)
    with pytest.raises(rg.Error, match="expected a ArithConfig, got CountdownConfig"):
        ArithEnv(CountdownConfig())
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_steps = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("make_config", "message"),
    [
        (lambda: ArithConfig(num_steps=0), "num_steps must be an integer >= 1, got 0"),
        (lambda: ArithConfig(operations="+^"), "operations must be a non-empty string"),
        (
            lambda: ArithConfig(word_problems="maybe"),
            r"word_problems='maybe' is not a bool \(true or false\)",
        ),
        (lambda: CountdownConfig(num_count=9), r"num_count must be an integer in \[2, 8\], got 9"),
        (
            lambda: IFEvalConfig(min_instructions=3, max_instructions=2),
            "min_instructions <= max_instructions",
        ),
        (lambda: IFEvalConfig(families="keywords:existence"), "families='keywords:existence' is not a list"),
        (lambda: IFEvalConfig(families=["no:such"]), r"unknown or no instruction families \['no:such'\]"),
    ],
)
def test_a_config_refuses_bad_values_with_an_rlvr_gym_error(make_config, message):
    with pytest.raises(rg.Error, match=message):
        make_config()


def test_knobs_given_as_json_data_come_back_typed():
    env = rg.make("mbpp-sample", limits={"wall_s": 2.0}, restricted="false")
    assert env.env_config.limits == Limits(wall_s=2.0) and env.env_config.restricted is False
    assert env.verifier.limits == Limits(wall_s=2.0)  # it reached the sandbox
    families = ["keywords:frequency", "punctuation:no_comma"]
    assert rg.make("ifeval", families=families).env_config.families == tuple(families)
    env = rg.make("gsm8k", data_path="/work/x.jsonl")
    assert env.env_config.data_path == Path("/work/x.jsonl")
    with pytest.raises(rg.Error, match=r"limits=\{'wall_sec': 2\} is not a Limits"):
        rg.make("mbpp-sample", limits={"wall_sec": 2})


def test_a_bridged_datasets_knobs_are_typed_by_reasoning_gyms_own_config():
    env = rg.make("reasoning_gym/basic_arithmetic", hardened="false", min_terms="3", train_size="4")
    assert env.env_config.hardened is False and env.env_config.train_size == 4
    assert env.config == {"min_terms": 3}  # the dataset's knob, typed by BasicArithmeticDatasetConfig
    with pytest.raises(rg.Error, match="basic_arithmetic-v0: knob min_terms='x' is not an int"):
        rg.make("reasoning_gym/basic_arithmetic", min_terms="x")


def test_a_run_folder_records_knobs_by_type_and_eval_makes_the_same_env(tmp_path, monkeypatch):
    monkeypatch.delenv("RLVR_GYM_DATA_DIR", raising=False)
    data = tmp_path / "gsm8k-data"
    data.mkdir()
    (data / "gsm8k_test.jsonl").write_text(
        json.dumps({"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"}) + "\n"
    )
    cases = [
        ("gsm8k", {"data_path": data, "strict_answer": "true"}),
        ("mbpp-sample", {"limits": Limits(wall_s=2.0), "reveal_tests": True}),
        ("ifeval", {"families": ("keywords:frequency", "punctuation:no_comma"), "max_instructions": 2}),
    ]
    for env_id, knobs in cases:
        run = tmp_path / env_id
        (run / FINAL_DIR).mkdir(parents=True)
        env = rg.make(env_id, **knobs)
        config = RunConfig(env_id=env_id, env_kwargs=knobs, output_dir=str(run))
        recorded_config(env, config, given_object=False).save(run / CONFIG_FILE)
        saved = json.loads((run / CONFIG_FILE).read_text())["env_kwargs"]
        assert saved == settings_of(env) and set(saved) == set(knobs)
        assert not any("(" in str(value) for value in saved.values())  # no repr() of an object
        chosen = run_dir.eval_env(run / FINAL_DIR, None, {})
        again = rg.make(chosen.env_id, **chosen.env_kwargs)
        assert again.env_config == env.env_config, env_id
        if env_id == "gsm8k":  # the recorded path is one a new make reads the data from
            assert again.tasks("test")[0]["answer"] == "5"


def test_a_run_config_takes_an_env_config_and_records_the_knobs_it_sets(tmp_path):
    chosen = ArithConfig(num_steps=3, word_problems=False)
    config = RunConfig(env_id="arith", env_kwargs=chosen, output_dir=str(tmp_path))
    env, resolved = resolve_env(None, config)
    assert env.env_config == chosen
    recorded = recorded_config(env, resolved, given_object=False).env_kwargs
    assert recorded == {"num_steps": 3, "word_problems": False}


def test_a_sandbox_pool_is_not_recorded_as_a_setting():
    from rlvr_gym.envs.config import record

    assert record({"pool": object(), "restricted": False}) == {"restricted": False}


def test_cli_lists_an_envs_knobs_with_type_default_and_help(capsys):
    assert main(["envs", "arith", "--knobs"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("arith-v0 ")  # the env named, not every id holding "arith"
    line = next(line for line in out.splitlines() if line.split()[:1] == ["word_problems"])
    assert re.search(r"word_problems\s+a bool\s+True\s+pose word problems", line)
    assert len([line for line in out.splitlines() if line.startswith("  ")]) == len(
        dataclasses.fields(ArithConfig)
    )
    # a column-mapping env: its own knobs from its annotations, its code base's from CodeConfig
    assert main(["envs", "code-v0", "--knobs"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"entry_point\s+text or None\s+None\n", out)
    assert re.search(r"limits\s+a Limits \(or a mapping of its fields\) or None\s+None\s+per-submission", out)


def test_a_user_env_without_a_config_keeps_its_annotated_knobs():
    class Flagged(envs.SingleTurnEnv):  # no config
        """An env with one annotated knob."""

        splits = ("train",)

        def __init__(self, *, loud: bool = False, **options):
            super().__init__(**options)
            self.loud = loud
            self.rubric = rg.make("arith").rubric

        def load_tasks(self, split):
            return [{"question": "1 + 1", "answer": "2"}]

        def question(self, task):
            return task["question"]

    envs.register("test-config/flagged-v0", Flagged)
    try:
        assert rg.make("test-config/flagged", loud="false").loud is False
        assert config_of(Flagged) is None
        assert [(k.name, k.type, k.default) for k in knobs_of(Flagged)][0] == ("loud", "a bool", "False")
    finally:
        envs.deregister("test-config/flagged-v0")


def test_the_catalogue_shows_each_configs_knobs_as_the_dataclasses_say(capsys):
    assert main(["envs", "--markdown"]) == 0
    rendered = capsys.readouterr().out.strip()
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("<!-- knobs:start -->")[1].split("<!-- knobs:end -->")[0].strip()
    assert block == rendered, (
        "docs/catalogue.md's knob tables are out of date: paste `rlvr-gym envs --markdown` "
        "between <!-- knobs:start --> and <!-- knobs:end -->"
    )
    for env_id in CONFIGURED:
        assert f"`{envs.spec(env_id).id}`" in block or env_id.startswith("reasoning_gym/")
    assert "`reasoning_gym/<name>-v0` (106) (`ReasoningGymConfig`)" in block
