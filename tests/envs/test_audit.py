"""The reward-hack audit: each weak verifier is caught by its family; the built-in envs pass."""

from __future__ import annotations

import json

import pytest

import rlvr_gym as rg
from rlvr_gym.backends.run_layout import AUDIT_FILE
from rlvr_gym.envs.audit import AuditFailedError
from rlvr_gym.trainers.cli import main
from rlvr_gym.verifiers import Verdict
from rlvr_gym.verifiers.exploits import FAMILIES, Subject, exploits_for, near_misses
from rlvr_gym.verifiers.single_answer import SingleAnswer, committed_answers
from tests.support import hackable_envs

HACKS = [*hackable_envs.WEAK, "code_harness", "instruction_echo"]


@pytest.mark.parametrize("family", HACKS)
def test_cli_audit_catches_each_weak_verifier(family, capsys):
    env_id = f"hack/{family.replace('_', '-')}-v0"
    code = main(["audit", env_id, "--import", "tests.support.hackable_envs", "--fast", "--json", "--n-tasks", "3"])
    report = json.loads(capsys.readouterr().out)
    assert report["families"][family]["ok"] is False
    assert report["families"]["gold"]["ok"] is True  # the reference itself still passes
    if family == "equivalent":  # strictness, not a hole: named as a warning, the audit passes
        assert code == 0 and report["ok"] and not report["failures"]
        assert any(line.startswith(f"{family}:") for line in report["warnings"])
        return
    assert code == 1
    assert not report["ok"]
    assert any(line.startswith(f"{family}:") for line in report["failures"])


def test_code_harness_names_the_exit_trick():
    report = rg.audit(rg.make("hack/code-harness-v0"), n_tasks=1, fast=True, families=["code_harness"])
    family = report.families["code_harness"]
    assert family.passed >= 2 and family.max_reward == 1.0 and not report.ok
    assert family.example["name"] in {
        "sys_exit_0",
        "os_exit_0",
        "exit_in_call",
        "raise_system_exit_in_call",
        "patched_excepthook",
    }


@pytest.mark.parametrize("env_id", ["arith", "gsm8k", "math500"])
def test_builtin_text_envs_pass_their_audit(env_id):
    report = rg.audit(rg.make(env_id), n_tasks=8, seed=0)
    assert report.ok, report.render()
    assert set(report.families) == set(FAMILIES) - {"code_harness", "instruction_echo"}
    assert report.families["hedging"].count > 50 and report.families["gold"].pass_rate == 1.0


@pytest.mark.parametrize("env_id", ["humaneval", "mbpp-sample"])
def test_builtin_code_envs_pass_their_audit(env_id):
    report = rg.audit(rg.make(env_id), n_tasks=4, seed=1, fast=True)
    assert report.ok, report.render()
    assert report.families["code_harness"].count >= 4 * 11
    assert report.families["equivalent"].pass_rate == 1.0


def test_cli_audit_passes_a_builtin_env_and_bad_import_is_one_line(capsys, tmp_path):
    out = tmp_path / "a.json"
    assert main(["audit", "arith", "--n-tasks", "2", "--output", str(out)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert json.loads(out.read_text())["ok"] is True
    assert main(["audit", "arith", "--import", "no_such_module_xyz"]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err


def test_train_refuses_a_hackable_env_and_no_audit_overrides(tmp_path, capsys):
    # fsdp-vllm cannot run on a CPU: a run that gets past the audit stops at that check, loading nothing
    args = ["train", "--env", "hack/hedging-v0", "--backend", "fsdp-vllm", "--max-steps", "1"]
    import tests.support.hackable_envs  # noqa: F401 - registers the hack envs for the in-process CLI

    assert main([*args, "--output-dir", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "audit" in err and "hedging" in err and "--no-audit" in err
    saved = json.loads((tmp_path / "a" / AUDIT_FILE).read_text())
    assert saved["ok"] is False and saved["families"]["hedging"]["passed"] > 0
    # with --no-audit the run gets past the audit and stops at the backend's own check instead
    assert main([*args, "--no-audit", "--output-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "fsdp-vllm" in err and "cannot run here" in err and "audit" not in err
    assert not (tmp_path / "b" / AUDIT_FILE).exists()


def test_train_api_raises_audit_failed_naming_the_family(tmp_path):
    config = rg.RunConfig(model=None, env_id="hack/near-miss-v0", output_dir=str(tmp_path))
    with pytest.raises(AuditFailedError, match="near_miss"):
        rg.train("hack/near-miss-v0", config, backend="fsdp-vllm")


def test_near_misses_are_distinct_and_wrong():
    assert near_misses("3000") == {
        "plus_one": "3001",
        "minus_one": "2999",
        "sign_flip": "-3000",
        "times_ten": "30000",
    }
    assert near_misses("12")["digit_swap"] == "21"
    assert near_misses("\\frac{3}{4}")["plus_one"] == "\\frac{4}{4}"


def test_guesses_equal_to_the_gold_are_not_exploits():
    subject = Subject(task={}, question="What is 0 + 1?", reference="<answer>1</answer>")
    names = {e.name for e in exploits_for(subject, ["format_without_substance"])}
    assert "guess_1" not in names and "guess_0" in names


def test_single_answer_needs_every_committed_answer_right():
    from rlvr_gym.verifiers import NumberMatch

    verifier = SingleAnswer(NumberMatch())
    task = {"answer": "4"}
    assert verifier("\\boxed{3} \\boxed{4}", task).passed is False
    assert verifier("#### 3\n<answer>4</answer>", task).passed is False
    assert verifier("The answer is 3.\nThe answer is 4.", task).passed is False
    assert verifier("The answer is 4.\nSo the answer is 4.", task).passed is True
    assert verifier("<answer>\\boxed{4}</answer>", task).passed is True
    assert verifier("\\boxed{4} so <answer>4</answer>", task).passed is True
    assert committed_answers("<answer>" * 100_000) is not None  # no closing tag: no markers
    assert verifier("\\boxed{4}" * 40, task).reason.value == "bad_format"
    assert isinstance(verifier("\ud800\x00", task), Verdict)


def test_single_answer_accepts_a_multi_part_gold_written_one_box_a_part():
    """An inner verifier that reads every number of the completion as the answer set (as a
    multi-answer math verifier does): one box per part passes, a hedge still does not."""
    import re

    def answer_set(completion, task):
        passed = sorted(re.findall(r"\d+", completion)) == sorted(task["answer"].split(", "))
        return Verdict.correct() if passed else Verdict.fail("wrong_answer")

    verifier = SingleAnswer(answer_set)
    assert verifier("\\boxed{1}\\boxed{2}", {"answer": "1, 2"}).passed is True
    assert verifier("\\boxed{1}\\boxed{3}", {"answer": "1, 2"}).passed is False
    assert verifier("\\boxed{3} <answer>4</answer>", {"answer": "4"}).passed is False


def test_report_page_shows_the_audit_escaped(tmp_path):
    from rlvr_gym.trainers.report import _audit_section

    assert "No audit" in _audit_section(tmp_path)
    rg.audit(rg.make("hack/echo-v0"), n_tasks=2, fast=True).save(tmp_path / AUDIT_FILE)
    page = _audit_section(tmp_path)
    assert "FAILED" in page and "<td>echo</td>" in page and "FAIL</td>" in page
    assert "<answer>" not in page and "&lt;answer&gt;" in page  # completions render as text


BRIDGED = "reasoning_gym/basic_arithmetic"
SMALL_RUN = ["--max-steps", "2", "--warm-start-steps", "0", "--max-completion-length", "8"]
SMALL_RUN += ["--num-generations", "2", "--prompts-per-step", "2", "--save-steps", "100"]


def test_a_refused_bridged_env_names_the_fixes_that_keep_the_audit(tmp_path, capsys):
    """Before: the refusal named only --no-audit, and hardened=true still failed on `equivalent`."""
    args = ["train", "--env", BRIDGED, "--backend", "fsdp-vllm", *SMALL_RUN]
    assert main([*args, "--output-dir", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "hedging" in err and "--env-arg hardened=true" in err and "--audit-skip hedging" in err
    # hardened scoring (our equivalence for numbers) closes the holes, so the run gets past the
    # audit and stops at the backend's own check (fsdp-vllm cannot run on a CPU); strictness that
    # only warns is pinned by test_cli_audit_catches_each_weak_verifier[equivalent]
    assert main([*args, "--env-arg", "hardened=true", "--output-dir", str(tmp_path / "b")]) == 2
    captured = capsys.readouterr()
    assert "cannot run here" in captured.err and "audit" not in captured.err
    saved = json.loads((tmp_path / "b" / AUDIT_FILE).read_text())
    assert saved["ok"] is True and saved["env_kwargs"]["hardened"] is True
    # skipping one family keeps the rest of the audit: hedging still refuses the default scoring
    assert main([*args, "--audit-skip", "near_miss", "--output-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "hedging" in err and "near_miss:" not in err
    assert "near_miss" not in json.loads((tmp_path / "c" / AUDIT_FILE).read_text())["families"]
    assert json.loads((tmp_path / "c" / "config.json").read_text())["audit_skip"] == ["near_miss"]


@pytest.mark.slow
def test_cli_trains_a_bridged_env_two_steps_with_the_audit_on(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        ["train", "--env", BRIDGED, "--env-arg", "hardened=true", "--output-dir", str(out), *SMALL_RUN]
    )
    assert code == 0, capsys.readouterr().err
    assert (out / "final").is_dir() and json.loads((out / AUDIT_FILE).read_text())["ok"] is True
    assert json.loads((out / "config.json").read_text())["audit"] is True
