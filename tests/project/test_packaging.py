"""One import root: the wheel installs only ``rlvr_gym``, coexists with packages named
``verifiers``/``envs``, imports light, and its layers point one way."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import rlvr_gym
from rlvr_gym import backends
from rlvr_gym.backends import Backend

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"verifiers": 0, "envs": 1, "backends": 2, "trainers": 3}
FOLDERS = {"rlvr_gym": ROOT / "rlvr_gym", **{name: ROOT / name for name in LAYERS}}


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def build_wheel(project: Path, out: Path) -> Path:
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(project),
        ]
    )
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(ROOT, tmp_path_factory.mktemp("rlvr_wheel"))


@pytest.fixture(scope="module")
def rival_wheel(tmp_path_factory) -> Path:
    """A throw-away distribution that owns the import names ``verifiers`` and ``envs``, as
    PrimeIntellect's ``verifiers`` and PyPI's ``envs`` do."""
    src = tmp_path_factory.mktemp("rival_src")
    (src / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "rival-verifiers"
        version = "1.0"
        [tool.setuptools]
        packages = ["verifiers", "envs"]
        """)
    )
    for name in ("verifiers", "envs"):
        (src / name).mkdir()
        (src / name / "__init__.py").write_text(
            f"OWNER = 'rival'\nclass Rubric:\n    name = 'rival-{name}'\n"
        )
    return build_wheel(src, tmp_path_factory.mktemp("rival_wheel"))


def test_the_wheel_installs_exactly_one_top_level_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert archive.read(top_level).decode().split() == ["rlvr_gym"]
    dist_info = top_level.split("/")[0]
    outside = [n for n in names if not (n.startswith("rlvr_gym/") or n.startswith(dist_info + "/"))]
    assert outside == []
    # the brief's packages are inside, the repository's tests/, examples/ and bench/ are not
    for package in ("envs", "verifiers", "verifiers/math", "verifiers/code", "backends", "trainers"):
        assert f"rlvr_gym/{package}/__init__.py" in names
    assert "rlvr_gym/envs/data/mbpp_fixture.jsonl" in names
    assert not any(part in ("tests", "examples", "bench") for n in names for part in n.split("/")[:-1])


def test_every_package_folder_is_in_the_wheel(wheel: Path) -> None:
    """A new sub-folder with an ``__init__.py`` must be listed in pyproject's packages."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for name, folder in FOLDERS.items():
        for init in folder.rglob("__init__.py"):
            relative = init.relative_to(folder)
            inside = "rlvr_gym/" + ("" if name == "rlvr_gym" else name + "/") + relative.as_posix()
            assert inside in names, f"{init} is not packaged"


@pytest.mark.slow
@pytest.mark.parametrize("order", ["rlvr_gym_first", "rival_first"])
def test_coexists_with_packages_named_verifiers_and_envs(
    order: str, wheel: Path, rival_wheel: Path, tmp_path: Path
) -> None:
    """Both distributions install into one fresh venv, both import and work, and uninstalling
    either leaves the other whole."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    )
    # Dependencies (gymnasium, numpy, ...) come from the test venv's site-packages as a plain path
    # entry: its .pth files (the editable rlvr_gym finder among them) are not processed there.
    dependencies = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "gymnasium").is_dir())
    (site / "zz_dependencies.pth").write_text(dependencies + "\n")
    wheels = [wheel, rival_wheel] if order == "rlvr_gym_first" else [rival_wheel, wheel]
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    for w in wheels:
        run([*pip, "install", "-q", "--no-deps", "--no-index", str(w)])
    probe = textwrap.dedent("""
        import json, sys
        import verifiers, envs
        import rlvr_gym as rg
        env = rg.make("arith")
        obs, info = env.reset(seed=0)
        gold = info["task"]["answer"]
        reward = env.step(f"<answer>{gold}</answer>")[1]
        print(json.dumps({"rival": [verifiers.OWNER, envs.OWNER, verifiers.Rubric.name],
                          "ours": rg.envs.__file__, "reward": reward}))
    """)
    result = json.loads(run([str(python), "-P", "-c", probe], cwd=tmp_path).stdout)
    assert result["rival"] == ["rival", "rival", "rival-verifiers"]
    assert result["ours"].startswith(str(site)) and result["reward"] == 1.0

    uninstall = "rlvr-gym" if order == "rlvr_gym_first" else "rival-verifiers"
    run([*pip, "uninstall", "-q", "-y", uninstall])
    survivor = "import verifiers, envs; assert verifiers.OWNER == envs.OWNER == 'rival'"
    if uninstall == "rival-verifiers":
        survivor = "import rlvr_gym as rg; assert rg.make('arith').reset(seed=0)[1]['task']"
    run([str(python), "-P", "-c", survivor], cwd=tmp_path)
    assert not (site / ("verifiers" if uninstall == "rival-verifiers" else "rlvr_gym")).exists()


def test_import_rlvr_gym_loads_neither_torch_sympy_nor_restrictedpython(tmp_path: Path) -> None:
    heavy = "('torch', 'sympy', 'RestrictedPython', 'transformers', 'trl')"
    code = (
        "import sys, rlvr_gym as rg\n"
        f"loaded = lambda: [m for m in {heavy} if m in sys.modules]\n"
        "assert loaded() == [], loaded()\n"
        "env = rg.make('arith'); obs, info = env.reset(seed=0)\n"
        "env.step('<answer>1</answer>'); rg.Verdict; rg.Rubric; rg.RunConfig; rg.check_env(env)\n"
        "assert loaded() == [], loaded()\n"
        "import rlvr_gym.backends, rlvr_gym.trainers\n"
        "assert loaded() == [], loaded()\n"
    )
    run([sys.executable, "-P", "-c", code], cwd=tmp_path)


def test_the_lazy_names_resolve_to_the_real_objects() -> None:
    from rlvr_gym import envs, trainers, verifiers

    assert rlvr_gym.make is envs.make and rlvr_gym.SingleTurnEnv is envs.SingleTurnEnv and rlvr_gym.Env is envs.Env
    assert rlvr_gym.Verdict is verifiers.Verdict and rlvr_gym.Rubric is verifiers.Rubric
    assert rlvr_gym.RunConfig is trainers.RunConfig is backends.RunConfig
    assert rlvr_gym.train is trainers.train and rlvr_gym.evaluate is trainers.evaluate
    assert set(rlvr_gym.__all__) <= set(dir(rlvr_gym))
    with pytest.raises(AttributeError, match="no attribute 'GRPOConfig'"):
        rlvr_gym.GRPOConfig  # noqa: B018 — renamed: TRL's class keeps that name


def test_every_error_raised_on_purpose_derives_from_the_one_base() -> None:
    from rlvr_gym import envs

    with pytest.raises(rlvr_gym.Error):
        envs.make("no-such-env")
    with pytest.raises(rlvr_gym.Error):
        rlvr_gym.RunConfig(num_generations=0)
    with pytest.raises(rlvr_gym.Error):
        backends.get("no-such-backend")
    with pytest.raises(rlvr_gym.Error):
        rlvr_gym.make("arith").step("too early")
    with pytest.raises(ValueError):  # the builtin meaning is kept
        rlvr_gym.RunConfig(num_generations=0)


def test_each_backend_is_a_backend_and_checks_the_run_it_will_start() -> None:
    for name in backends.BACKENDS:
        module = backends.get(name)
        assert isinstance(module, Backend), name
        ok, why = module.available(launch=None, mode="colocate")
        assert isinstance(ok, bool) and why


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement names (function-level and TYPE_CHECKING ones included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, node.module)]
            if node.module == "rlvr_gym":
                found += [(node.lineno, f"rlvr_gym.{alias.name}") for alias in node.names]
    return found


PEER_VERIFIERS_ADAPTER = ROOT / "backends" / "peers" / "verifiers_env.py"


def test_layers_point_one_way_and_nothing_imports_the_bare_folder_names() -> None:
    """verifiers <- envs <- backends <- trainers (<- cli, inside trainers); rlvr_gym.error is
    below all of them; only the root ``rlvr_gym/__init__`` may name every layer."""
    problems = []
    for name, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            if path == ROOT / "rlvr_gym" / "__init__.py":
                continue
            own = LAYERS.get(name, -1)  # rlvr_gym/error.py is the bottom layer
            for line, module in _imports(path):
                top, _, rest = module.partition(".")
                if path == PEER_VERIFIERS_ADAPTER and top == "verifiers":
                    continue  # PrimeIntellect's `verifiers` package, the peer this adapter plugs into
                if top in LAYERS or top in ("tests", "examples", "bench"):
                    problems.append(f"{path}:{line} imports bare {module!r} (use rlvr_gym.{module})")
                if top == "rlvr_gym" and rest:
                    target = rest.split(".")[0]
                    if LAYERS.get(target, -1) > own:
                        problems.append(f"{path}:{line}: {name} imports the higher layer {module!r}")
    assert problems == []


def test_the_cli_prints_one_line_for_an_error_and_a_traceback_for_a_bug(capsys, monkeypatch) -> None:
    from rlvr_gym.trainers import cli

    assert cli.main(["check", "no-such-env"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("rlvr-gym: error:") and err.count("\n") == 1

    def bug(args):
        raise KeyError("a real bug")

    monkeypatch.setattr(cli, "cmd_envs", bug)
    parser = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda: _with_command(parser(), "envs", bug))
    with pytest.raises(KeyError, match="a real bug"):
        cli.main(["envs"])


def _with_command(parser, name, func):
    for action in parser._subparsers._group_actions:
        action.choices[name].set_defaults(run=func)
    return parser


def test_the_console_script_and_module_entry_run_from_outside_the_repository(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = run([sys.executable, "-P", "-m", "rlvr_gym.trainers.cli", "envs"], cwd=tmp_path, env=env).stdout
    assert "arith" in out and "gsm8k" in out
