"""One error module: every public exception class lives in ``rlvr_gym/error.py``, is named
``...Error``, derives from ``rlvr_gym.Error``, and its docstring's tree is the real one."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import rlvr_gym
from rlvr_gym import error

ROOT = Path(__file__).resolve().parents[1]
# The judge's own control flow, never seen by a caller; and the one raised inside the sandbox to the
# submission's code (its name is what the submission and the tool's reply see).
NOT_IN_THE_TREE = {"SandboxGone", "JudgeTimeout", "OutputLimitExceeded"}


def exception_classes_outside_the_error_module() -> list[str]:
    found = []
    for folder in ("verifiers", "envs", "backends", "trainers"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                    continue
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                is_error = any(b.endswith(("Error", "Exception")) or b in dir(error) for b in bases)
                if is_error and node.name not in NOT_IN_THE_TREE:
                    found.append(f"{path.relative_to(ROOT)}:{node.name}")
    return found


def test_every_public_exception_is_defined_in_the_error_module():
    assert exception_classes_outside_the_error_module() == []


def test_every_error_is_named_for_what_went_wrong_and_derives_from_the_base():
    classes = [k for _, k in inspect.getmembers(error, inspect.isclass) if k.__module__ == error.__name__]
    assert classes and all(issubclass(k, rlvr_gym.Error) for k in classes)
    assert [k.__name__ for k in classes if k is not error.Error and not k.__name__.endswith("Error")] == []


def test_the_docstring_draws_every_class_of_the_tree():
    classes = [k.__name__ for _, k in inspect.getmembers(error, inspect.isclass) if k.__module__ == error.__name__]
    drawn = error.__doc__.split("::", 1)[1]
    assert [name for name in classes if f" {name}" not in drawn] == []


def test_a_malformed_data_row_is_invalid_input_not_missing_data():
    assert issubclass(error.BadDataRowError, error.InvalidArgumentError)
    assert not issubclass(error.BadDataRowError, error.DataUnavailableError)
