"""``mbpp``: Google's Mostly Basic Python Problems, and ``mbpp-sample``: 12 tasks we wrote in its format.

``mbpp-v0`` is MBPP itself. Data, first that applies: ``data_path`` (a ``.jsonl``/``.jsonl.gz``
file whose rows carry a ``split`` field, or a folder holding ``mbpp_<split>.jsonl``);
``$RLVR_GYM_DATA_DIR/mbpp_<split>.jsonl``; else the hub (``google-research-datasets/mbpp``,
``full``). With ``RLVR_GYM_DATA_DIR`` set and no copy there it is a clear error, never a stand-in:
no registry package ships MBPP's test set (we looked: evalplus and lm-eval download it at run time).

``mbpp-sample-v0`` is the bundled fixture :data:`FIXTURE_PATH` — twelve small tasks we wrote in
MBPP's schema, with our call and stdin/stdout kinds besides asserts. It is not MBPP and its scores
say nothing about MBPP; it exists so the code env runs offline.

Rows use the hub's fields (``task_id``, ``text``, ``code``, ``test_list``, ``test_setup_code``).
A row may instead give ``tests`` directly in any harness kind, which is how the fixture has
function-call cases (``calls``) and stdin/stdout programs (``stdio``) besides MBPP's asserts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlvr_gym.envs.code_env import FENCE_INSTRUCTION, CodeEnv, fenced
from rlvr_gym.envs.data import DATA_DIR_ENV, DataUnavailableError, data_dir, load_hub, parse_rows, read_jsonl
from rlvr_gym.verifiers import Task

FIXTURE_PATH = Path(__file__).resolve().parent / "data" / "mbpp_fixture.jsonl"
HUB_NAME, HUB_CONFIG = "google-research-datasets/mbpp", "full"
_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


def mbpp_tests(row: Mapping[str, Any]) -> dict[str, Any]:
    """The harness spec of a row: its own ``tests``, else MBPP's asserts with the setup code."""
    if "tests" in row:
        return dict(row["tests"])
    defined = _DEF.findall(row.get("code", ""))
    called = [name for name in defined if re.search(rf"\b{re.escape(name)}\s*\(", row["test_list"][0])]
    spec: dict[str, Any] = {
        "kind": "assert",
        "setup": row.get("test_setup_code") or "",
        "cases": list(row["test_list"]),
    }
    if called:
        spec["entry_point"] = called[0]
    return spec


class MbppEnv(CodeEnv):
    """MBPP-style Python tasks: asserts, function-call cases or stdin/stdout cases per task."""

    splits = ("train", "test")

    def __init__(self, *, data_path: str | os.PathLike[str] | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.data_path = data_path

    def _local_rows(self, split: str) -> list[dict[str, Any]] | None:
        if self.data_path is not None:
            path = Path(self.data_path)
            if path.is_dir():
                return read_jsonl(path / f"mbpp_{split}.jsonl")
            return [row for row in read_jsonl(path) if row.get("split") == split]
        folder = data_dir()
        if folder is None:
            return None
        if (folder / f"mbpp_{split}.jsonl").exists():
            return read_jsonl(folder / f"mbpp_{split}.jsonl")
        raise DataUnavailableError(
            f"MBPP is not on this machine: no mbpp_{split}.jsonl in ${DATA_DIR_ENV} ({folder}); put a copy "
            "there, pass data_path=..., or use mbpp-sample-v0 (12 MBPP-style tasks we wrote, not MBPP)"
        )

    def load_tasks(self, split: str) -> Sequence[Task]:
        rows = self._local_rows(split)
        if rows is None:
            rows = load_hub(HUB_NAME, HUB_CONFIG, split)
        return parse_rows(rows, lambda row: {**row, "tests": mbpp_tests(row)})

    def question(self, task: Task) -> str:
        tests = task["tests"]
        if tests["kind"] == "assert":
            shown = "\n".join(tests["cases"])
            contract = f"Your code should pass these tests:\n\n{fenced(shown)}"
        elif tests["kind"] == "calls":
            case = tests["cases"][0]
            arguments = ", ".join(map(repr, case.get("args", [])))
            contract = f"Name the function `{tests['fn']}`. Example: `{tests['fn']}({arguments})` returns `{case['expected']!r}`."
        else:
            case = tests["cases"][0]
            contract = f"Example input:\n{fenced(case.get('stdin', ''), '')}\nExpected output:\n{fenced(case['stdout'], '')}"
        return f"{task['text']}\n\n{contract}\n\n{FENCE_INSTRUCTION}"

    def reference_completion(self, task: Task) -> str:
        return fenced(task["code"])

    def wrong_completions(self, task: Task) -> list[str]:
        tests = task["tests"]
        name = tests.get("entry_point") or tests.get("fn")
        stub = f"def {name}(*args, **kwargs):\n    return None" if name else "print('no idea')"
        return [*super().wrong_completions(task), fenced(stub)]


class MbppSampleEnv(MbppEnv):
    """12 MBPP-style Python tasks we wrote (asserts, calls, stdin/stdout): an offline sample, not MBPP."""

    def __init__(self, **options: Any) -> None:
        super().__init__(data_path=FIXTURE_PATH, **options)
