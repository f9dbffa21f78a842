"""Third-party envs: a real package, really pip-installed, found through the entry-point group."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlvr_gym import envs

PLUGIN_MODULE = '''
from rlvr_gym.envs import SingleTurnEnv
from rlvr_gym.verifiers import ExactMatch, Rubric


class EchoEnv(SingleTurnEnv):
    """Repeat the given word (a third-party test env)."""

    splits = ("train",)

    def __init__(self, *, words=("alpha", "beta", "gamma"), **options):
        super().__init__(**options)
        self.words = list(words)
        self.rubric = Rubric({"correct": ExactMatch("word")})

    def load_tasks(self, split):
        return [{"word": w} for w in self.words]

    def question(self, task):
        return f"Say {task['word']}."

    def reference_completion(self, task):
        return task["word"]
'''

PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-rlvr-envs"
version = "0.0.1"

[tool.setuptools]
py-modules = ["acme_envs"]

[project.entry-points."rlvr_gym.envs"]
"acme/echo-v0" = "acme_envs:EchoEnv"
"arith" = "acme_envs:EchoEnv"
"bad id!" = "acme_envs:EchoEnv"
"""


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    source, target = root / "src", root / "site"
    source.mkdir()
    (source / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (source / "acme_envs.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (target / "acme_envs.py").is_file()
    return target


def run_with_plugin(site: Path, code: str) -> subprocess.CompletedProcess:
    # rlvr_gym itself comes from the installed distribution; only the plugin's site is added.
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_an_installed_package_registers_its_env_through_the_entry_point(installed_plugin):
    result = run_with_plugin(
        installed_plugin,
        "import json\nfrom rlvr_gym import envs\n"
        "env = envs.make('acme/echo-v0', words=['delta'])\n"
        "obs, info = env.reset(seed=0)\n"
        "verdict = env.step('delta')[4]['verdict']\n"
        "print(json.dumps({'check': envs.check_env(env), 'passed': verdict.passed,"
        " 'entry_point': envs.spec('acme/echo-v0').entry_point, 'arith': envs.spec('arith').entry_point,"
        " 'ids': sorted(envs.registry)}))",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] and report["entry_point"] == "acme_envs:EchoEnv"
    assert report["check"] == list(envs.CHECK_NAMES)
    # A plugin cannot hijack a built-in id, and a malformed id is skipped — both with a warning.
    assert report["arith"] == "rlvr_gym.envs.arith:ArithEnv"
    assert "bad id!" not in report["ids"]
    assert "already registered" in result.stderr and "malformed env id" in result.stderr


def test_without_the_package_the_env_is_unknown_and_import_still_works():
    assert "acme/echo-v0" not in envs.registry
    with pytest.raises(envs.UnknownEnvError):
        envs.make("acme/echo-v0")
