"""Layers point one way: verifiers <- envs <- backends <- trainers (the CLI lives in trainers).

A module may import its own layer and the layers below it, never one above — at module level,
inside a function, or under ``TYPE_CHECKING`` alike (a lazy import is still a dependency).
``rlvr_gym/error.py`` sits below every layer and imports none of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("verifiers", "envs", "backends", "trainers")


def imported_layers(path: Path) -> list[tuple[int, str]]:
    """(line, layer) for every import of an ``rlvr_gym.<layer>`` module in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "rlvr_gym" and len(parts) > 1 and parts[1] in LAYERS:
                found.append((node.lineno, parts[1]))
    return found


def modules() -> list[Path]:
    return [p for layer in LAYERS for p in sorted((ROOT / layer).rglob("*.py"))] + [ROOT / "rlvr_gym" / "error.py"]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_layer_above_its_own(path: Path) -> None:
    own = path.relative_to(ROOT).parts[0]
    rank = LAYERS.index(own) if own in LAYERS else -1
    above = [f"line {line}: rlvr_gym.{layer}" for line, layer in imported_layers(path) if LAYERS.index(layer) > rank]
    assert above == [], f"{path.relative_to(ROOT)} (layer {own}) imports a layer above it"


def test_the_check_sees_a_lazy_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rlvr_gym.trainers import train\n    return train\n")
    assert imported_layers(module) == [(2, "trainers"), (2, "trainers")]
