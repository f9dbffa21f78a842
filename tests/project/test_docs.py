"""The docs hold: they build with warnings as errors, every code block of the README and of
docs/ runs as written (offline, on a CPU), and every ``rlvr_gym.*`` name, repository path and
``python -m`` module that the docs, docstrings and comments mention exists."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_blocks import ROOT, Block, blocks, doc_files

# Each page's python blocks run in order in one fresh interpreter (a later block may use what an
# earlier one defined), in the real __main__ so that classes a block defines pickle.
RUNNER = r"""
import json, sys, traceback
for block in json.load(sys.stdin):
    try:
        exec(compile(block["code"], block["where"], "exec"), globals())
    except BaseException:
        traceback.print_exc()
        print(f"\nthe block at {block['where']} failed", file=sys.stderr)
        sys.exit(1)
"""


def _env() -> dict[str, str]:
    """Offline, CPU only, quiet; the test session's data folder (tests/conftest.py sets it)."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        CUDA_VISIBLE_DEVICES="",
        OMP_NUM_THREADS="1",
        MPLBACKEND="Agg",
        TQDM_DISABLE="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
        # `rlvr-gym` and `python` in a bash block are this interpreter's
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    return env


def _all_blocks() -> list[Block]:
    return [block for path in doc_files() for block in blocks(path)]


def _page_params(lang: str) -> list:
    params = []
    for path in doc_files():
        runs = [b for b in blocks(path) if b.lang == lang and b.runs]
        if runs:
            marks = [pytest.mark.slow] if any(b.slow for b in runs) else []
            params.append(pytest.param(path, marks=marks, id=str(path.relative_to(ROOT))))
    return params


def _report(result: subprocess.CompletedProcess) -> str:
    return (
        f"exit {result.returncode}\n--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-6000:]}"
    )


@pytest.mark.parametrize("path", _page_params("python"))
def test_python_blocks_run_as_written(path: Path, tmp_path: Path) -> None:
    runs = [{"where": b.where, "code": b.code} for b in blocks(path) if b.lang == "python" and b.runs]
    result = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(runs),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(),
        timeout=600,
    )
    assert result.returncode == 0, _report(result)


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, marks=[pytest.mark.slow] if b.slow else [], id=b.where)
        for b in _all_blocks()
        if b.lang == "bash" and b.runs
    ],
)
def test_bash_blocks_run_as_written(block: Block) -> None:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        capture_output=True,
        text=True,
        cwd=ROOT,  # as a reader runs them: from the repository root
        env=_env(),
        timeout=600,
    )
    assert result.returncode == 0, _report(result)


def test_every_block_not_run_says_why() -> None:
    """A block is run, or marked with its reason: none is left out silently."""
    every = _all_blocks()
    # a fence without a language would slip past the runner as text
    assert [b.where for b in every if not b.lang] == []
    skipped = [b for b in every if b.lang in ("python", "bash") and not b.runs]
    assert all(b.not_run for b in skipped)
    # the README's two commands are the only ones excused by name; each is there exactly once
    readme = blocks(ROOT / "README.md")
    for name in ("main-command", "test-command"):
        assert [b.lang for b in readme if name in b.names] == ["bash"], name


def test_ci_runs_the_readme_test_command_and_it_installs_the_docs_extra() -> None:
    """.ci/run takes the block after <!-- test-command -->; it must build the docs, so needs [docs]."""
    program = re.search(r"command=\$\(awk '(.*?)' README\.md\)", (ROOT / ".ci" / "run").read_text(), re.S)
    assert program, ".ci/run no longer reads the command with awk; update this test"
    awk = subprocess.run(["awk", program.group(1), "README.md"], capture_output=True, text=True, cwd=ROOT)
    extras = re.search(r"-e '\.\[([\w,-]+)\]'", awk.stdout)
    assert extras, f".ci/run found no install of the project in README's test command: {awk.stdout!r}"
    assert "docs" in extras.group(1).split(",") and "python -m pytest" in awk.stdout


@pytest.mark.slow  # 3 s of CPU, 7-13 s on a busy 2-core machine
def test_docs_build_with_warnings_as_errors(tmp_path: Path) -> None:
    pytest.importorskip("sphinx", reason="needs rlvr-gym[docs]")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-E",
            "-q",
            "-b",
            "html",
            "docs",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=600,
    )
    assert result.returncode == 0 and not result.stderr.strip(), _report(result)
    assert (tmp_path / "index.html").is_file()


# --- names and paths that went stale -------------------------------------------------------

TRACKED = subprocess.run(
    ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
    capture_output=True,
    text=True,
    cwd=ROOT,
).stdout.split()
TEXT_FILES = [
    ROOT / f for f in TRACKED if f.endswith((".py", ".md", ".toml", ".sh", ".txt")) or f == ".ci/run"
]
# tests may name what must *not* exist (the bare folder names, TRL's GRPOConfig under our root)
PROSE_FILES = [f for f in TEXT_FILES if f.relative_to(ROOT).parts[0] != "tests"]
LAYERS = r"(?:envs|verifiers|backends|trainers)"
STALE_FORMS = {
    # `verifiers.v1` is PrimeIntellect's package (ours has no v1): the peer the adapter plugs into
    "bare-folder import": re.compile(
        rf"^\s*(?:>>> )?(?:import (?!verifiers\.v1\b){LAYERS}\b|from (?!verifiers\.v1\b){LAYERS}(?:\.\w+)* import )",
        re.M,
    ),
    "Sphinx role without the rlvr_gym root": re.compile(
        rf":(?:class|func|mod|meth|attr|exc|data):`~?{LAYERS}\."
    ),
    "python -m without the rlvr_gym root": re.compile(rf"python3? -m {LAYERS}\."),
}
DOTTED = re.compile(r"(?<![\w./])rlvr_gym(?:\.[A-Za-z_]\w*)+")
REPO_PATH = re.compile(
    r"(?<![\w./<-])((?:envs|verifiers|backends|trainers|rlvr_gym|tests|examples|bench|docs|\.ci)/[\w./-]*\w)"
)


def _lines(path: Path):
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        yield f"{path.relative_to(ROOT)}:{number}", line


def test_no_stale_forms_from_before_the_import_root() -> None:
    found = []
    for path in PROSE_FILES:
        text = path.read_text(encoding="utf-8")
        for what, pattern in STALE_FORMS.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {what}: {match.group(0).strip()}")
    assert found == []


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as error:
            if error.name and not error.name.startswith("rlvr_gym"):
                return True  # an optional engine that is not installed here: cannot tell
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_every_rlvr_gym_name_mentioned_exists() -> None:
    missing = []
    for path in PROSE_FILES:
        for where, line in _lines(path):
            for match in DOTTED.finditer(line):
                name = match.group(0).rstrip(".")
                if not _resolves(name):
                    missing.append(f"{where}: {name}")
    assert missing == []


def _ignored(mentioned: str) -> bool:
    """Git-ignored on purpose (bench/wheels/, docs/_build/): named in prose, never committed."""
    return any(
        subprocess.run(["git", "check-ignore", "-q", candidate], cwd=ROOT).returncode == 0
        for candidate in (mentioned, mentioned.rstrip("/") + "/")
    )


def test_every_repository_path_mentioned_exists() -> None:
    """Paths in the repository as the reader sees it (``verifiers/exploits.py``, not the wheel's
    ``rlvr_gym/verifiers/exploits.py``); tests are left out, they name wheel contents."""
    missing = []
    for path in PROSE_FILES:
        for where, line in _lines(path):
            for match in REPO_PATH.finditer(line):
                mentioned = match.group(1)
                if re.search(r"-v\d+$", mentioned):  # an env id such as examples/vowels-v0
                    continue
                if not (ROOT / mentioned).exists() and not _ignored(mentioned):
                    missing.append(f"{where}: {mentioned}")
    assert missing == []
