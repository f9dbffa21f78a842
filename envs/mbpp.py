"""``mbpp``: Google's Mostly Basic Python Problems, and ``mbpp-sample``: 12 tasks we wrote in its format.

``mbpp-v0`` is MBPP itself, as Google publishes it: one ``mbpp.jsonl`` of 974 tasks split by task
id as the paper splits them (:data:`SPLITS`: 11-510 test, 601-974 train, 511-600 validation, 1-10
the few-shot prompt), or with ``sanitized=True`` the hand-checked ``sanitized-mbpp.json`` (427
tasks, same ranges; its ``prompt`` and ``test_imports`` stand for ``text`` and the setup code).
Data, first that applies: ``data_path`` (that file; a ``.jsonl`` whose rows carry a ``split``
field keeps it; a folder holding ``mbpp_<split>.jsonl``); ``$RLVR_GYM_DATA_DIR/mbpp_<split>.jsonl``,
else ``$RLVR_GYM_DATA_DIR/mbpp.jsonl`` (``sanitized-mbpp.json``); else the hub
(``google-research-datasets/mbpp``, ``full`` or ``sanitized``). With ``RLVR_GYM_DATA_DIR`` set and
no copy there it is a clear error, never a stand-in. ``test_setup_code`` runs before the asserts;
the 11 tasks with a ``challenge_test_list`` add those asserts when ``challenge_tests=True``.

``mbpp-sample-v0`` is the bundled fixture :data:`FIXTURE_PATH` — twelve small tasks we wrote in
MBPP's schema, with our call and stdin/stdout kinds besides asserts. It is not MBPP and its scores
say nothing about MBPP; it exists so the code env runs offline.

Rows use the hub's fields (``task_id``, ``text``, ``code``, ``test_list``, ``test_setup_code``).
A row may instead give ``tests`` directly in any harness kind, which is how the fixture has
function-call cases (``calls``) and stdin/stdout programs (``stdio``) besides MBPP's asserts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rlvr_gym.envs.code_env import CodeConfig, CodeEnv, code_question, fenced
from rlvr_gym.envs.config import knob
from rlvr_gym.envs.data import DATA_DIR_ENV, DataUnavailableError, data_dir, load_hub, parse_rows, read_jsonl
from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.envs.tables import read_table
from rlvr_gym.verifiers import Task

FIXTURE_PATH = Path(__file__).resolve().parent / "data" / "mbpp_fixture.jsonl"
HUB_NAME, HUB_CONFIG = "google-research-datasets/mbpp", "full"
FILES = {False: "mbpp.jsonl", True: "sanitized-mbpp.json"}
SPLITS = {
    "test": range(11, 511),
    "train": range(601, 975),
    "validation": range(511, 601),
    "prompt": range(1, 11),
}
"""The paper's split of MBPP by task id (Austin et al. 2021, section 2.1)."""


def split_of(row: Mapping[str, Any]) -> str | None:
    """The split a row belongs to: its own ``split`` field, else the paper's range of its task id."""
    if "split" in row:
        return str(row["split"])
    task_id = row.get("task_id")
    return next((name for name, ids in SPLITS.items() if task_id in ids), None)


def published_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A sanitized-MBPP row in the full file's fields (``prompt`` -> ``text``, imports -> setup)."""
    if "text" in row or "prompt" not in row:
        return dict(row)
    out = {**row, "text": row["prompt"]}
    imports = row.get("test_imports") or []
    if "test_setup_code" not in row:
        out["test_setup_code"] = "\n".join(imports)
    return out


_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


def mbpp_tests(row: Mapping[str, Any], *, challenge: bool = False) -> dict[str, Any]:
    """The harness spec of a row: its own ``tests``, else MBPP's asserts with the setup code
    (and the ``challenge_test_list`` asserts after them, with ``challenge``)."""
    if "tests" in row:
        return dict(row["tests"])
    defined = _DEF.findall(row.get("code", ""))
    called = [name for name in defined if re.search(rf"\b{re.escape(name)}\s*\(", row["test_list"][0])]
    cases = list(row["test_list"]) + (list(row.get("challenge_test_list") or []) if challenge else [])
    spec: dict[str, Any] = {
        "kind": "assert",
        "setup": row.get("test_setup_code") or "",
        "cases": cases,
    }
    if called:
        spec["entry_point"] = called[0]
    return spec


@dataclass(frozen=True)
class MbppConfig(CodeConfig):
    """``mbpp``'s knobs: the code env's, where the data is, and which edition and tests."""

    data_path: Path | None = knob(
        None,
        "a copy of mbpp.jsonl / sanitized-mbpp.json, or a folder (none: $RLVR_GYM_DATA_DIR, else the hub)",
    )
    sanitized: bool = knob(False, "the sanitized 427 tasks (hand-checked) instead of the full 974")
    challenge_tests: bool = knob(False, "add the challenge_test_list asserts (11 tasks have them)")


class MbppEnv(CodeEnv, SingleTurnEnv):
    """MBPP-style Python tasks: asserts, function-call cases or stdin/stdout cases per task."""

    splits = ("train", "test", "validation", "prompt")

    config_class: ClassVar[type[MbppConfig]] = MbppConfig
    env_config: MbppConfig

    def __init__(self, config: MbppConfig | None = None, /, **knobs: Any) -> None:
        super().__init__(config, **knobs)
        config = self.env_config
        self.data_path, self.sanitized, self.challenge_tests = (
            config.data_path,
            config.sanitized,
            config.challenge_tests,
        )

    def _file_rows(self, path: Path, split: str) -> list[dict[str, Any]]:
        return [row for row in read_table(path) if split_of(row) == split]

    def _local_rows(self, split: str) -> list[dict[str, Any]] | None:
        if self.data_path is not None:
            path = Path(self.data_path)
            if path.is_dir():
                if (path / f"mbpp_{split}.jsonl").exists() or not (path / FILES[self.sanitized]).exists():
                    return read_jsonl(path / f"mbpp_{split}.jsonl")
                path = path / FILES[self.sanitized]
            return self._file_rows(path, split)
        folder = data_dir()
        if folder is None:
            return None
        if not self.sanitized and (folder / f"mbpp_{split}.jsonl").exists():
            return read_jsonl(folder / f"mbpp_{split}.jsonl")
        if (folder / FILES[self.sanitized]).exists():
            return self._file_rows(folder / FILES[self.sanitized], split)
        raise DataUnavailableError(
            f"MBPP is not on this machine: no {FILES[self.sanitized]} (nor mbpp_{split}.jsonl) in "
            f"${DATA_DIR_ENV} ({folder}); put a copy there, pass data_path=..., or use mbpp-sample-v0 "
            "(12 MBPP-style tasks we wrote, not MBPP)"
        )

    def load_tasks(self, split: str) -> Sequence[Task]:
        rows = self._local_rows(split)
        if rows is None:
            rows = load_hub(HUB_NAME, "sanitized" if self.sanitized else HUB_CONFIG, split)
        return parse_rows(
            rows,
            lambda row: {
                **published_row(row),
                "tests": mbpp_tests(published_row(row), challenge=self.challenge_tests),
            },
            required=("task_id", "code"),
        )

    def question(self, task: Task) -> str:
        return code_question(task["text"], task["tests"])

    def reference_completion(self, task: Task) -> str:
        return fenced(task["code"])

    def wrong_completions(self, task: Task) -> list[str]:
        tests = task["tests"]
        name = tests.get("entry_point") or tests.get("fn")
        stub = f"def {name}(*args, **kwargs):\n    return None" if name else "print('no idea')"
        return [*super().wrong_completions(task), fenced(stub)]


class MbppSampleEnv(MbppEnv):
    """12 MBPP-style Python tasks we wrote (asserts, calls, stdin/stdout): an offline sample, not MBPP."""

    splits = ("train", "test")

    def __init__(self, **options: Any) -> None:
        super().__init__(data_path=FIXTURE_PATH, **options)
