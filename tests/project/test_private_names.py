"""What modules may reach into: no module of ``backends/`` calls another module's private names
(ours or a library's), and no public helper of ``backends/`` or ``trainers/`` is used by tests
alone. Static checks of the source tree, like the layer check beside them; the override guard
for TRL's private methods is ``tests/backends/engine/test_trl_privates.py``."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "backends"
PUBLIC_DESPITE_THE_UNDERSCORE = {"os._exit"}  # documented public API (a forked child's exit)


def private_calls_across_modules(path: Path) -> list[str]:
    """``alias._name`` where ``alias`` is an imported module (ours or a library's)."""
    tree = ast.parse(path.read_text())
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                try:
                    is_module = importlib.util.find_spec(full) is not None
                except (ImportError, ValueError):
                    is_module = False
                if is_module:
                    modules[alias.asname or alias.name] = full
    calls = [
        f"{modules[n.value.id]}.{n.attr}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id in modules
        and n.attr.startswith("_")
        and not n.attr.startswith("__")
    ]
    return [call for call in calls if call not in PUBLIC_DESPITE_THE_UNDERSCORE]


@pytest.mark.parametrize("path", sorted(BACKENDS.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_backend_calls_another_modules_private_names(path):
    assert private_calls_across_modules(path) == []


def test_the_check_sees_a_private_call_through_either_import_form(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text(
        "import json\nfrom rlvr_gym.backends import trl as trl_backend\nimport os\n"
        "json._default_encoder\ntrl_backend._train_here()\nos._exit(0)\n"
    )
    found = private_calls_across_modules(source)
    assert found == ["json._default_encoder", "rlvr_gym.backends.trl._train_here"]


def test_no_public_helper_in_backends_or_trainers_is_called_by_tests_alone():
    """Tests check what the product runs: ``fsdp_vllm.shard`` was called by a test worker only.
    A name the README, the docs or a module's docstring example shows users counts as used."""
    folders = ("backends", "trainers", "envs", "verifiers", "rlvr_gym", "examples", "bench")
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    used = {word for page in pages if page.is_file() for word in re.findall(r"\w+", page.read_text())}
    defined: list[tuple[Path, str]] = []
    for path in (p for folder in folders for p in (ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text())
        used.update(re.findall(r"\w+", ast.get_docstring(tree) or ""))  # a module's own usage example
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.asname or node.name.rsplit(".", 1)[-1])
        if path.parts[len(ROOT.parts)] in ("backends", "trainers"):
            defined += [
                (path, n.name)
                for n in tree.body
                if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")
            ]
    unused = [f"{path.relative_to(ROOT)}:{name}" for path, name in defined if name not in used]
    assert unused == []
