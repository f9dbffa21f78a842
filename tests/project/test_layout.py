"""The tests are a map of the code: ``tests/<path>/`` holds the tests of ``<path>/``, helpers live
in ``tests/support/``, and ``tests/project/`` checks the repository as a whole."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
NOT_A_PACKAGE_FOLDER = {"support", "project", "__pycache__"}


def test_every_test_folder_mirrors_a_package_folder():
    folders = [p for p in TESTS.rglob("*") if p.is_dir() and not NOT_A_PACKAGE_FOLDER & set(p.relative_to(TESTS).parts)]
    assert folders, "tests/ has no package folders"
    assert [str(f.relative_to(TESTS)) for f in folders if not (ROOT / f.relative_to(TESTS)).is_dir()] == []


def test_helpers_live_in_support_and_test_folders_hold_only_tests():
    stray = [
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("*.py")
        if p.parent.name != "support"
        and not p.name.startswith("test_")
        and p.name not in ("__init__.py", "conftest.py")
    ]
    assert stray == [], "a helper module belongs in tests/support/"
