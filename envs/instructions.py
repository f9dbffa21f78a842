"""``instructions``: prompts with IFEval-style instruction ids and kwargs from any dataset.

``envs.make("instructions", data="my.jsonl", prompt="prompt", instruction_ids="instruction_id_list",
kwargs="kwargs")`` poses each row's prompt and scores a response as IFEval does: every listed
instruction checked once (an id listed twice is checked twice), with its ``kwargs`` as given
(the hub copy's ``None`` padding dropped, as IFEval's harness drops it), strictly and loosely.
``ifeval-bench`` is this env on IFEval's own 541 prompts: ``ifeval_input_data.jsonl`` in
``$RLVR_GYM_DATA_DIR``, else the hub's ``google/IFEval``.

Every row is checked when the split loads: a missing column, an unknown instruction id, a
``kwargs`` list of the wrong length or an instruction missing a keyword it needs is a
:class:`~rlvr_gym.envs.data.BadDataRowError` naming ``file:line``.

The training reward is IFEval's strict prompt-level score (1.0 when every instruction is
followed) plus half the strict instruction-level share; the loose scores ride along at weight 0.
``evaluate()`` reports IFEval's four numbers (:meth:`InstructionsEnv.benchmark_metrics`).
The reward and ``passed`` also go through ``ifeval-v0``'s substance gate (topic words from a
``topic`` column, else taken from the prompt); IFEval's four numbers never do, and
``substance_gate=False`` scores form alone, exactly as IFEval does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rlvr_gym.envs.data import data_dir, parse_rows, read_jsonl
from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.envs.ifeval_responses import compose
from rlvr_gym.envs.tables import read_table
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError
from rlvr_gym.verifiers import Rubric, Task
from rlvr_gym.verifiers.ifeval import InstructionsFollowed, ifeval_kwargs
from rlvr_gym.verifiers.instructions import CHECKS, check, require_packages

IFEVAL_FILE = "ifeval_input_data.jsonl"
IFEVAL_HUB = "google/IFEval"
PROBE = "A probe response. It has words."
"""Text each row's instructions are tried on when the split loads: a missing keyword shows up as
the KeyError of the check that needs it, before any training step."""

COMPONENTS = {
    "prompt_strict": ("strict", "all"),
    "inst_strict": ("strict", "fraction"),
    "prompt_loose": ("loose", "all"),
    "inst_loose": ("loose", "fraction"),
}
"""IFEval's four scores, one ungated rubric component each (lm-eval's names, less ``_acc``)."""

_TOPIC_WORD = re.compile(r"[A-Za-z]{4,}")
NOT_TOPIC = frozenset(
    [
        "also",
        "been",
        "does",
        "each",
        "even",
        "from",
        "have",
        "here",
        "into",
        "just",
        "like",
        "make",
        "many",
        "more",
        "most",
        "much",
        "must",
        "once",
        "only",
        "over",
        "some",
        "such",
        "sure",
        "than",
        "that",
        "them",
        "then",
        "they",
        "this",
        "very",
        "were",
        "what",
        "when",
        "will",
        "with",
        "about",
        "above",
        "after",
        "again",
        "answer",
        "answers",
        "article",
        "before",
        "below",
        "bullet",
        "capital",
        "capitals",
        "comma",
        "commas",
        "contain",
        "containing",
        "content",
        "entire",
        "example",
        "exactly",
        "extra",
        "first",
        "format",
        "highlight",
        "highlighted",
        "include",
        "included",
        "keyword",
        "keywords",
        "language",
        "least",
        "letter",
        "letters",
        "lowercase",
        "markdown",
        "marks",
        "might",
        "other",
        "paragraph",
        "paragraphs",
        "phrase",
        "please",
        "points",
        "postscript",
        "quotation",
        "quotations",
        "repeat",
        "request",
        "response",
        "responses",
        "section",
        "sections",
        "sentence",
        "sentences",
        "should",
        "short",
        "start",
        "starting",
        "their",
        "there",
        "these",
        "thing",
        "things",
        "third",
        "times",
        "title",
        "titles",
        "total",
        "using",
        "which",
        "while",
        "whole",
        "without",
        "words",
        "write",
        "wrapped",
        "written",
        "would",
        "your",
        "yourself",
    ]
)
"""Instruction vocabulary: never a prompt's topic word."""


def topic_words(prompt: str) -> list[str]:
    """A prompt's content words (four letters or more, not instruction vocabulary): the gate's
    topic when the data has no ``topic`` column."""
    words = dict.fromkeys(w.lower() for w in _TOPIC_WORD.findall(prompt))
    found = [w for w in words if w not in NOT_TOPIC]
    return found or [w.lower() for w in re.findall(r"[A-Za-z]{3,}", prompt)][:20] or ["response"]


def _instructions(ids: Any, kwargs: Any) -> list[dict[str, Any]]:
    if isinstance(ids, str) or not isinstance(ids, Sequence) or not ids:
        raise InvalidArgumentError(f"instruction ids must be a non-empty list, got {ids!r:.80}")
    if kwargs is None:
        kwargs = [{}] * len(ids)
    if isinstance(kwargs, Mapping) or not isinstance(kwargs, Sequence) or len(kwargs) != len(ids):
        raise InvalidArgumentError(
            f"kwargs must be a list of {len(ids)} dicts (one per instruction), got {kwargs!r:.80}"
        )
    out = []
    for name, kw in zip(ids, kwargs, strict=True):
        if name not in CHECKS:
            raise InvalidArgumentError(f"unknown instruction id {name!r}")
        if kw is not None and not isinstance(kw, Mapping):
            raise InvalidArgumentError(f"kwargs of {name!r} must be a dict, got {kw!r:.80}")
        given = ifeval_kwargs(kw)
        try:
            check(name, given, PROBE, "")
        except KeyError as exc:
            raise InvalidArgumentError(
                f"instruction {name!r} needs the keyword {exc.args[0]!r}; has {sorted(given)}"
            ) from None
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"instruction {name!r} has unusable kwargs {given}: {exc}") from None
        out.append({"id": name, "kwargs": given})
    return out


class InstructionsEnv(SingleTurnEnv):
    """Prompts + IFEval instruction ids/kwargs from a dataset, scored with IFEval's semantics."""

    splits: ClassVar[tuple[str, ...]] = ("train",)

    def __init__(
        self,
        *,
        data: str | os.PathLike[str] | None = None,
        split: str = "train",
        config: str | None = None,
        prompt: str = "prompt",
        instruction_ids: str = "instruction_id_list",
        kwargs: str = "kwargs",
        key: str | None = "key",
        topic: str | None = None,
        substance_gate: bool = True,
        **env_options: Any,
    ) -> None:
        require_packages()
        for name, value in (
            ("split", split),
            ("prompt", prompt),
            ("instruction_ids", instruction_ids),
            ("kwargs", kwargs),
        ):
            if not isinstance(value, str) or not value:
                raise InvalidTypeError(f"{name} must be a non-empty string, got {value!r}")
        self.splits = (split,)
        super().__init__(**env_options)
        self.data, self.config = data, config
        if not isinstance(substance_gate, bool):
            raise InvalidTypeError(f"substance_gate must be a bool, got {substance_gate!r}")
        self.columns = {
            "prompt": prompt,
            "instruction_ids": instruction_ids,
            "kwargs": kwargs,
            "key": key,
            "topic": topic,
        }
        self.substance_gate = substance_gate
        self._reference_check = InstructionsFollowed("strict", "all", substance_gate=substance_gate)
        ifeval = {
            name: InstructionsFollowed(mode, agg, substance_gate=False) for name, (mode, agg) in COMPONENTS.items()
        }
        if substance_gate:  # the reward and `passed` go through the substance gate; IFEval's numbers do not
            components = {
                "all": InstructionsFollowed("strict", "all"),
                "each": InstructionsFollowed("strict", "fraction"),
            }
            weights = {"all": 1.0, "each": 0.5} | dict.fromkeys(ifeval, 0.0)
            self.rubric = Rubric(components | ifeval, weights=weights, passed_by="all")
        else:
            weights = {"prompt_strict": 1.0, "inst_strict": 0.5, "prompt_loose": 0.0, "inst_loose": 0.0}
            self.rubric = Rubric(ifeval, weights=weights, passed_by="prompt_strict")

    def _rows(self, split: str) -> list[dict[str, Any]]:
        if self.data is not None:
            return read_table(self.data, split=split, config=self.config)
        folder = data_dir()
        if folder is not None and (folder / IFEVAL_FILE).is_file():
            return read_jsonl(folder / IFEVAL_FILE)
        return read_table(IFEVAL_HUB, split=split)

    def _task(self, row: Mapping[str, Any]) -> dict[str, Any]:
        c = self.columns
        text = row[c["prompt"]]
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError(f"{c['prompt']!r} must be a non-empty string, got {text!r:.80}")
        kwargs = row.get(c["kwargs"])
        task: dict[str, Any] = {
            "prompt": text,
            "instructions": _instructions(row[c["instruction_ids"]], kwargs),
        }
        if c["key"] and c["key"] in row:
            task["key"] = row[c["key"]]
        if self.substance_gate:  # the gate's inputs: topic words, and the prompt itself as what not to echo
            topic = row[c["topic"]] if c["topic"] else topic_words(text)
            task["topic"] = [topic] if isinstance(topic, str) else [str(t) for t in topic]
            task["descriptions"] = [text]
        return task

    def load_tasks(self, split: str) -> Sequence[Task]:
        return parse_rows(
            self._rows(split), self._task, required=(self.columns["prompt"], self.columns["instruction_ids"])
        )

    def question(self, task: Task) -> str:
        return task["prompt"]

    def reference_completion(self, task: Task) -> str:
        response = compose(
            task["prompt"],
            task["instructions"],
            topic=task.get("topic"),
            # IFEval's strict checks and the gate, not the env's current rubric (which a user may swap)
            accept=lambda text: self._reference_check(text, task).passed,
        )
        if response is None:  # the env convention for "no oracle here" (check_env, tiny-model skip it)
            raise NotImplementedError(
                f"no response follows every instruction of task {task.get('key', '?')}: they contradict each other"
            )
        return response

    def benchmark_metrics(
        self, verdicts: Sequence[Mapping[str, Any]], tasks: Sequence[Task]
    ) -> dict[str, float]:
        """IFEval's four numbers over ``verdicts`` (``Verdict.to_dict()``) of ``tasks``: prompt-level
        (all of a prompt's instructions followed) and instruction-level (each instruction counted),
        strict and loose — lm-eval's ``prompt_level_strict_acc`` and the rest."""
        names = [f"{level}_{mode}" for level in ("prompt", "inst") for mode in ("strict", "loose")]
        if not verdicts or not all(
            set(names) <= set((v.get("details") or {}).get("scores") or {}) for v in verdicts
        ):
            return {}  # a rubric a user swapped in has no IFEval components: nothing to report
        out = {}
        for mode in ("strict", "loose"):
            prompts = [v["details"]["scores"][f"prompt_{mode}"] for v in verdicts]
            shares = [v["details"]["scores"][f"inst_{mode}"] for v in verdicts]
            sizes = [len(t["instructions"]) for t in tasks]
            followed = sum(round(share * size) for share, size in zip(shares, sizes, strict=True))
            out[f"prompt_level_{mode}_acc"] = sum(prompts) / len(prompts)
            out[f"inst_level_{mode}_acc"] = followed / sum(sizes)
        return out


__all__ = ["COMPONENTS", "IFEVAL_FILE", "IFEVAL_HUB", "InstructionsEnv"]
