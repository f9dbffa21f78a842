"""Tool surfaces a submission can abuse: caps the submission cannot reach, a linear tool-call parser, one
submission per message and held-back tests in humaneval-feedback, the episode time budget, a
tool argument named ``name``, and the audit families that catch each hole."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from rlvr_gym import envs
from rlvr_gym.backends.tool_bridge import environment_factory
from rlvr_gym.envs.audit import audit
from rlvr_gym.envs.humaneval_feedback import HumanEvalFeedbackEnv
from rlvr_gym.envs.python_tool_envs import GSM8KPythonEnv
from rlvr_gym.envs.tool_env import MAX_CALL_CHARS, parse_tool_calls, tool
from rlvr_gym.envs.tool_exploits import lookup_table_policy, play, replay_policy
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Reason
from tests.support import tool_probes
from tests.support.timing import bound

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ----- run_python: the output cap is the judge's, and the worker survives ----------------------


def assert_cap_holds(results: dict) -> None:
    assert results["bypass status"] == "output_limit", results
    assert results["bypass output chars"] <= 4000
    assert results["next call"] == "42\n"  # the worker served on
    wrong = results["wrong answer after the bypass"]
    assert wrong == {"reward": 0.0, "reason": "wrong_answer", "terminated": True}, wrong  # not `error`
    assert results["right answer after the bypass"]["reward"] == 1.0


def test_output_written_around_the_cap_is_the_programs_failure():
    assert_cap_holds(tool_probes.run_all())


@pytest.mark.slow
def test_output_written_around_the_cap_without_namespaces():
    from tests.verifiers.code.test_walls import _needs_landlock

    _needs_landlock()
    results = tool_probes.run_all(namespaces=False)
    assert results["isolation"]["pid"] == "none"
    assert_cap_holds(results)


@pytest.mark.slow
def test_output_written_around_the_cap_for_an_ordinary_user():
    from tests.verifiers.code.test_walls import _as_ordinary_user

    if os.geteuid() != 0:
        pytest.skip("running as an ordinary user already: the test above covers this path")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": ROOT, "HOME": "/nonexistent"}
    data = []
    if "RLVR_GYM_DATA_DIR" in os.environ:
        env["RLVR_GYM_DATA_DIR"] = data_dir = os.path.realpath(os.environ["RLVR_GYM_DATA_DIR"])
        data.append(data_dir)
    done = subprocess.run(
        [*_as_ordinary_user(*data), sys.executable, "-P", "-m", "tests.support.tool_probes"],
        capture_output=True, text=True, env=env, cwd="/", timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert "not root" in " ".join(results["isolation"]["notes"])
    assert_cap_holds(results)


# ----- the tool-call parser ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hostile",
    [
        "<tool_call>" + " \n\t" * 35_000,  # unclosed, then whitespace: the regex backtracked cubically
        ("<tool_call> " + " " * 50) * 1_700,
        "<tool_call>\n" + "x " * 50_000,
        "</tool_call>" * 8_000 + "<tool_call>" * 1_000,
    ],
)
def test_hostile_text_parses_in_linear_time(hostile):
    assert len(hostile) >= 100_000
    started = time.perf_counter()
    calls = parse_tool_calls({"content": hostile})
    assert time.perf_counter() - started < bound(0.5)
    assert all(c.error for c in calls)


def test_the_parser_reads_what_the_regex_read():
    pattern = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
    call = '{"name": "run_python", "arguments": {"code": "print(1)"}}'
    texts = [
        f"<tool_call>{call}</tool_call>",
        f"Let me see.\n<tool_call>\n  {call}\n</tool_call> and <tool_call>{call}</tool_call>",
        f"<tool_call>{call}</tool_call><tool_call>{call}",
        "<tool_call> </tool_call><tool_call>{oops</tool_call>",
    ]
    for text in texts:
        parsed = parse_tool_calls({"content": text})
        assert len(parsed) == len(pattern.findall(text))
        assert [c.name for c in parsed] == [
            "run_python" if body == call else "?" for body in pattern.findall(text)
        ]


def test_an_overlong_tool_call_is_refused_unread():
    body = json.dumps({"name": "run_python", "arguments": {"code": "#" * MAX_CALL_CHARS}})
    (call,) = parse_tool_calls({"content": f"<tool_call>{body}</tool_call>"})
    assert call.error and "longer than" in call.error


# ----- a tool argument named `name` ----------------------------------------------------------------


class Greeter(GSM8KPythonEnv):
    @tool
    def greet(self, name: str) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
        """
        return f"Hello, {name}!"


def test_a_tool_argument_named_name_reaches_the_tool():
    adapter = environment_factory(Greeter())()
    adapter.reset(task_split="train", task_index=0)
    assert adapter.greet(name="Ada") == "Hello, Ada!"


# ----- the episode time budget ---------------------------------------------------------------------


class Slow(GSM8KPythonEnv):
    @tool
    def wait(self, seconds: float) -> str:
        """Wait.

        Args:
            seconds: How long.
        """
        time.sleep(seconds)
        return "waited"


def test_the_time_budget_truncates_the_episode_with_its_reason():
    env = Slow(episode_time_s=1.0, max_turns=10)
    env.reset(options={"index": 0})
    _, _, terminated, truncated, _ = env.step(env.tool_call("wait", seconds=0.6))
    assert not (terminated or truncated)
    two = {
        "role": "assistant",
        "content": "",
        "tool_calls": [env.tool_call("wait", seconds=0.6)["tool_calls"][0]] * 2,
    }
    obs, reward, terminated, truncated, info = env.step(two)
    assert truncated and not terminated and reward == 0.0
    assert obs[-2]["content"] == "waited" and "time budget of 1 s is spent" in obs[-1]["content"]
    assert info["verdict"].reason is Reason.TIMEOUT and "time budget" in info["verdict"].details["why"]
    assert "time budget" in info["turns"][-1]["truncated"]


def test_the_time_budget_has_a_default_and_is_validated():
    assert envs.make("gsm8k-python").episode_time_s == 60.0
    for bad in (0, -1, float("inf"), True, "soon"):
        with pytest.raises(InvalidArgumentError, match="episode_time_s"):
            Slow(episode_time_s=bad)
    assert Slow(episode_time_s="5").episode_time_s == 5.0  # a knob's text is typed by its config


# ----- humaneval-feedback: one submission per message, reward from held-back tests -----------------


@pytest.fixture(scope="module")
def feedback_env():
    env = envs.make("humaneval-feedback")
    yield env
    env.close()


def test_one_submission_per_message(feedback_env):
    _, info = feedback_env.reset(options={"index": 0})
    task = info["task"]
    wrong = feedback_env.tool_call("submit", code=task["prompt"] + "    return False\n")["tool_calls"][0]
    right = feedback_env.tool_call("submit", code=task["prompt"] + task["canonical_solution"])["tool_calls"][
        0
    ]
    obs, _, terminated, _, info = feedback_env.step(
        {"role": "assistant", "content": "", "tool_calls": [wrong, right]}
    )
    assert not terminated and obs[-1]["content"] == "error: one submission per message; this one was not run"
    assert [c.get("submission") for c in info["turns"][-1]["tool_calls"]] == [True, None]
    verdict = feedback_env.finish()
    assert not verdict.passed  # the final submission is the wrong one, not the right one after it


def test_every_second_test_is_held_back_and_never_named(feedback_env):
    for task in feedback_env.tasks("test")[:40]:
        cases = task["tests"]["cases"]
        held = task["heldback_tests"]["cases"]
        assert held and held == (cases[1::2] if len(cases) > 1 else cases)
        visible = task["feedback_tests"]["cases"] if task["feedback_tests"] else []
        assert visible == (cases[0::2] if len(cases) > 1 else [])
        assert len(task["visible_calls"]) == len(visible)


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 47, 102])
def test_feedback_replayed_into_a_table_earns_nothing(feedback_env, index):
    """A program right on every call the feedback named (values from the reference) and None
    elsewhere; on main it reached 1.0 on these tasks."""
    subject_of = __import__("rlvr_gym.envs.audit", fromlist=["_subjects"])._subjects
    (subject,) = subject_of(feedback_env, feedback_env.tasks("test"), [index])
    verdict = play(feedback_env, "test", index, replay_policy(feedback_env, subject))
    assert not verdict.passed and verdict.score <= 0.5, verdict
    guessed = play(feedback_env, "test", index, lookup_table_policy(feedback_env, subject.task))
    assert not guessed.passed, guessed


def test_a_task_with_one_case_has_its_first_submission_final(feedback_env):
    tasks = feedback_env.tasks("test")
    index = next(i for i, t in enumerate(tasks) if t["feedback_tests"] is None)
    feedback_env.reset(options={"index": index})
    task = tasks[index]
    _, reward, terminated, _, info = feedback_env.step(
        f"```python\n{task['prompt']}{task['canonical_solution']}```"
    )
    assert terminated and reward == 1.0


# ----- the audit families catch each hole ----------------------------------------------------------


class TakesEverySubmission(HumanEvalFeedbackEnv):
    """Hackable, as on main: every submission of a message runs."""

    @tool
    def submit(self, code: str) -> str:
        """Submit.

        Args:
            code: The solution.
        """
        self._submitted_in = -1
        return super().submit(code)


class PaysTheVisibleTests(HumanEvalFeedbackEnv):
    """Hackable, as on main: the reward counts the tests the feedback named."""

    def _held_back_verdict(self, text, task):
        return self.verify(text, task)


class CrashesOnBigOutput(GSM8KPythonEnv):
    """Hackable, as on main: a program that writes a lot breaks the tool (our fault, unscored)."""

    @tool
    def run_python(self, code: str) -> str:
        """Run a program.

        Args:
            code: The program.
        """
        if "<<" in code:
            self.note(infra_error="the worker died")
            return "[sandbox_error] the worker died"
        return super().run_python(code)


class Uncapped(GSM8KPythonEnv):
    """Hackable: the tool's answer is not capped."""

    @tool
    def run_python(self, code: str) -> str:
        """Run a program.

        Args:
            code: The program.
        """
        return "y" * 100_000 if "<<" in code else super().run_python(code)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_class", "family"),
    [
        (TakesEverySubmission, "multi_submit"),
        (PaysTheVisibleTests, "feedback_replay"),
        (CrashesOnBigOutput, "crash_to_error"),
        (Uncapped, "oversized_output"),
    ],
)
def test_the_new_families_catch_their_hole(env_class, family):
    env = env_class()
    report = audit(env, n_tasks=2, seed=0, fast=True, families=[family, "tool_gold"])
    env.close()
    assert not report.families[family].ok, report.render()
    assert report.families["tool_gold"].ok
