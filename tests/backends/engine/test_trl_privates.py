"""Our coupling to TRL's private members, declared: every override or use of a private name of
TRL's ``GRPOTrainer`` (or the ``transformers.Trainer`` under it) in ``backends/`` and ``trainers/``
must be listed in :data:`DECLARED`, and every listed name must still exist in the installed TRL.

A private method can change in any TRL release without notice; overriding it or writing a private
attribute is the real coupling to TRL's internals. Listing it here makes a new one a reviewed
decision and an upgrade that drops or renames one a failing test instead of a silent no-op
override.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

trl = pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

ROOT = Path(__file__).resolve().parents[3]

DECLARED = {
    "_get_per_token_logps_and_entropies": "backends/engine/memory.py overrides it: chunked log-probs "
    "read the LM head's weight instead of materialising [batch, seq, vocab] logits",
    "_metrics": "backends/engine/liger.py appends Liger's KL and clip ratio where TRL logs its own",
}


def library_private_names() -> tuple[set[str], set[str]]:
    """(private methods/class attributes, private instance attributes) of TRL's GRPOTrainer's MRO."""
    classes = [k for k in trl.GRPOTrainer.__mro__ if k.__module__.split(".")[0] in ("trl", "transformers")]
    members = {name for k in classes for name in vars(k) if name.startswith("_") and not name.startswith("__")}
    attributes: set[str] = set()
    for k in classes:
        try:
            tree = ast.parse(inspect.getsource(k))
        except (OSError, TypeError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and isinstance(node.ctx, ast.Store)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                attributes.add(node.attr)
    return members, attributes


def private_names_our_classes_touch() -> dict[str, list[str]]:
    """Private names our classes define (methods) or read/write on ``self`` without defining them."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "backends").rglob("*.py")) + sorted((ROOT / "trainers").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            defined = {
                n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            assigned = {
                n.attr
                for n in ast.walk(cls)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
                and isinstance(n.ctx, ast.Store)
            }
            used = {
                n.attr
                for n in ast.walk(cls)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
            }
            for name in (defined | (used - assigned)) | (assigned - defined):
                if name.startswith("_") and not name.startswith("__"):
                    found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{cls.name}")
    return found


def test_every_override_or_use_of_a_trl_private_name_is_declared():
    members, attributes = library_private_names()
    ours = private_names_our_classes_touch()
    undeclared = {
        name: where for name, where in ours.items() if (name in members or name in attributes) and name not in DECLARED
    }
    assert undeclared == {}, (
        "these private names of TRL's GRPOTrainer (or transformers.Trainer) are overridden or used; "
        "declare each in DECLARED with why, or use a public API"
    )


def test_every_declared_private_name_still_exists_in_the_installed_trl():
    members, attributes = library_private_names()
    gone = [name for name in DECLARED if name not in members and name not in attributes]
    assert gone == [], f"TRL {trl.__version__} no longer has {gone}: the override or use is dead code now"


def test_the_guard_sees_both_kinds_of_coupling():
    ours = private_names_our_classes_touch()
    assert "backends/engine/memory.py:MemoryGRPOTrainer" in ours["_get_per_token_logps_and_entropies"]
    assert "backends/engine/liger.py:LigerGRPOTrainer" in ours["_metrics"]
