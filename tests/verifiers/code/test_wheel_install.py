"""The sandbox hides the package's own data for a regular (wheel) install, in all three wall modes.

An editable install keeps ``rlvr_gym`` in the checkout, which the minimal root never shows; a
wheel puts it in site-packages, and the root showed every package the worker had imported from
there whole — ``envs/data/mbpp_fixture.jsonl`` (hidden tests) included. Here a real wheel is built
and installed into a fresh venv (``--no-deps``; the dependencies come from this venv by a ``.pth``
file) and the package-data probe runs with that venv's Python, as root, as an ordinary user and
without namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.verifiers.code.test_walls import ROOT, _as_ordinary_user, _needs_landlock

PROBES = str(ROOT / "tests" / "support" / "sandbox_probes.py")


@pytest.fixture(scope="module")
def wheel_python() -> Iterator[str]:
    """The Python of a fresh venv with rlvr_gym installed from a wheel built from this checkout,
    in a folder every user may enter (pytest's own is 0700: there a sandbox uid could not reach
    the data whatever the walls did, and the probe would prove nothing)."""
    where = Path(tempfile.mkdtemp(prefix="rlvr-wheel-"))
    where.chmod(0o755)
    try:
        yield _install(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _install(where: Path) -> str:
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no checkout on the path
    source = where / "source"  # a copy: building in the checkout would leave build/ there
    shutil.copytree(
        ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__")
    )
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(where / "dist"), str(source)],
        check=True, capture_output=True, timeout=300, env=env,
    )  # fmt: skip
    (wheel,) = (where / "dist").glob("rlvr_gym-*.whl")
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    install = [
        *pip,
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "--ignore-installed",
        str(wheel),
    ]
    subprocess.run(install, check=True, timeout=300, env=env)
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    deps = sysconfig.get_paths()["purelib"]
    Path(site, "deps-from-the-test-venv.pth").write_text(deps + "\n")
    # the sandbox's own imports from this venv too: the worker shows them from under /tmp (a CI
    # checkout's layout), bound inside a hidden site-packages that each fresh /tmp takes along
    shutil.copytree(Path(deps, "RestrictedPython"), Path(site, "RestrictedPython"))
    shutil.copy(Path(deps, "pyseccomp.py"), Path(site, "pyseccomp.py"))
    data = [p for p in Path(site, "rlvr_gym").rglob("mbpp_fixture.jsonl")]
    assert data and all(os.stat(p).st_mode & 0o004 for p in data)  # readable by anyone but for the walls
    return python


def _probe(command: list[str]) -> dict:
    done = subprocess.run(
        command, capture_output=True, text=True, cwd="/", timeout=180,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert "site-packages" in results["package"], results["package"]  # the wheel's copy, not the checkout
    assert any(p.endswith("mbpp_fixture.jsonl") for p in results["data"]), results["data"]
    assert results["control: honest code after a fresh /tmp"] is True  # the runtime under /tmp moved along
    assert "RestrictedPython" in results["isolation"]["filesystem"], results["isolation"]
    return results


@pytest.mark.slow
def test_package_data_is_hidden_with_a_wheel_install_as_root(wheel_python):
    results = _probe([wheel_python, "-P", PROBES, "--package-data"])
    assert results["read-the-package-data"] is False, results["isolation"]


@pytest.mark.slow
def test_package_data_is_hidden_with_a_wheel_install_without_namespaces(wheel_python):
    _needs_landlock()
    results = _probe([wheel_python, "-P", PROBES, "--package-data", "--no-namespaces"])
    assert results["read-the-package-data"] is False, results["isolation"]


@pytest.mark.slow
def test_package_data_is_hidden_with_a_wheel_install_for_an_ordinary_user(wheel_python):
    if os.geteuid() != 0 or any(shutil.which(t) is None for t in ("useradd", "setpriv", "unshare")):
        pytest.skip("needs root to make the ordinary user and run as them")
    venv = str(Path(wheel_python).parents[1])
    results = _probe([*_as_ordinary_user(venv), wheel_python, "-P", PROBES, "--package-data"])
    assert "not root" in " ".join(results["isolation"]["notes"])
    assert results["read-the-package-data"] is False, results["isolation"]
