"""The reasoning-gym bridge: each of its 106 procedural datasets as env ``reasoning_gym/<name>-v0``.

Registration costs nothing: the ids come from :data:`DATASET_NAMES` (reasoning-gym 0.1.25's
factory, pinned; a test checks it against the installed factory), and ``reasoning_gym`` (seven
seconds of imports) is loaded only when an env is made. Install ``rlvr-gym[reasoning-gym]``.

* Tasks: ``create_dataset(name, seed=seed, size=train_size + test_size, **config)`` — train is
  entries ``[0, train_size)``, test the next ``test_size``, so the splits never share an entry
  index, and two instances with one seed pose the same tasks, in any process and any run (rows are
  made in the scoring worker, whose hash seed is fixed). Config knobs are env kwargs.
* Scoring: reasoning-gym's own ``score_answer`` (:class:`ReasoningGymScore`), run in a worker
  process with a deadline and a memory limit, on the answer our extractor takes — the same
  answer reasoning-gym's ``extract_answer`` takes (the last complete ``<answer>...</answer>``
  pair, scanning left to right), found in linear time (theirs is a lazy regex that can take
  minutes on a megabyte of tags) and only from completions under :data:`MAX_COMPLETION_CHARS`.
* ``hardened=True``: our extraction, our equivalence where the gold's type is known (a number,
  a yes/no, a flat list of numbers: :mod:`rlvr_gym.verifiers.answer_types`; reasoning-gym's
  scorers paid ``-8`` for ``8``, ``8 or 9``, a sorted list off by one, the opposite bool), and
  reasoning-gym's ``score_answer`` only where we cannot do better, with no partial credit; the
  whole wrapped in :class:`~rlvr_gym.verifiers.SingleAnswer` (several answer tags pass only if
  each does). The datasets of :func:`cannot_check` (``hardened=True``) are refused: they cannot be
  checked, so they are not trained on.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import importlib.util
import json
import math
import threading
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rlvr_gym.envs.config import EnvConfig, configure, knob
from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.envs.generated import GeneratedTasks
from rlvr_gym.envs.knobs import _NotConvertible, convert, knob_error
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError, NotAvailableError
from rlvr_gym.verifiers import Reason, Rubric, SingleAnswer, Task, Verdict
from rlvr_gym.verifiers.answer_types import typed_match
from rlvr_gym.verifiers.math.budget import RunFailedError, Worker, _Process

VERSION = "0.1.25"
NAMESPACE = "reasoning_gym"
MAX_COMPLETION_CHARS = 200_000
MAX_ANSWER_CHARS = 20_000
SCORE_TIMEOUT = 10.0
WORKER_MEMORY_MB = 2048
WORKER_TARGET = "rlvr_gym.envs.reasoning_gym_worker:request"
WORKER_ENVIRONMENT = {"PYTHONHASHSEED": "0"}
"""Generators that walk sets follow the hash seed: fixed in the worker, where rows are made."""
ROW_TIMEOUT = 120.0
"""Seconds to make one row: the slowest generators take seconds a puzzle on a busy machine."""
ROWS_KEPT = 1024
"""Task rows an env keeps once made: some generators take a second a puzzle (knight_swap,
futoshiki), and ``reset(seed)``, the checker and a trainer's epochs ask for one index many times."""
_OPEN, _CLOSE = "<answer>", "</answer>"

DATASET_NAMES: tuple[str, ...] = (
    "ab", "acre", "advanced_geometry", "aiw", "arc_1d", "arc_agi", "base_conversion", "basic_arithmetic",
    "bf", "binary_alternation", "binary_matrix", "bitwise_arithmetic", "boxnet", "caesar_cipher",
    "calendar_arithmetic", "chain_sum", "circuit_logic", "codeio", "coin_flip", "color_cube_rotation",
    "complex_arithmetic", "composite", "count_bits", "count_primes", "countdown", "course_schedule",
    "cryptarithm", "decimal_arithmetic", "decimal_chain_sum", "dice", "emoji_mystery", "family_relationships",
    "figlet_font", "fraction_simplification", "futoshiki", "game_of_life", "game_of_life_halting", "gcd",
    "graph_color", "group_anagrams", "gsm_symbolic", "intermediate_integration", "isomorphic_strings", "jugs",
    "kakurasu", "knight_swap", "knights_knaves", "largest_island", "lcm", "leg_counting", "letter_counting",
    "letter_jumble", "list_functions", "mahjong_puzzle", "manipulate_matrix", "maze", "mini_sudoku",
    "modulo_grid", "n_queens", "needle_haystack", "number_filtering", "number_format", "number_sequence",
    "number_sorting", "palindrome_generation", "palindrome_partitioning", "path_star", "polynomial_equations",
    "polynomial_multiplication", "pool_matrix", "power_function", "prime_factorization", "products",
    "propositional_logic", "puzzle24", "quantum_lock", "ransom_note", "rearc", "rectangle_count",
    "rotate_matrix", "rotten_oranges", "rubiks_cube", "rush_hour", "self_reference", "sentence_reordering",
    "shortest_path", "simple_equations", "simple_geometry", "simple_integration", "sokoban", "spell_backward",
    "spiral_matrix", "string_insertion", "string_manipulation", "string_splitting", "string_synthesis",
    "sudoku", "survo", "syllogism", "time_intervals", "tower_of_hanoi", "tsumego", "word_ladder",
    "word_sequence_reversal", "word_sorting", "zebra_puzzles",
)  # fmt: skip
"""reasoning-gym 0.1.25's ``reasoning_gym.factory.DATASETS``, sorted."""

_NO_ORACLE = "reasoning-gym gives no oracle answer (answer=None; score_answer checks the answer's constraints), so there is no reference completion for the oracle checks"
CANNOT_CHECK: dict[str, str] = {
    "boxnet": _NO_ORACLE,
    "graph_color": _NO_ORACLE,
    "propositional_logic": _NO_ORACLE,
    "rubiks_cube": _NO_ORACLE,
    "rush_hour": _NO_ORACLE,
    "composite": "needs a `datasets` knob (a list of dataset specs); it has no default to check",
    "game_of_life_halting": "its score_answer is bool(answer) == bool(gold): any non-empty answer scores 1.0 when the gold is non-empty, so wrong answers pass",
}
"""The bridged envs that do not pass ``check_env``, with the reason (reasoning-gym 0.1.25)."""

HARDENED_CHECKS = frozenset({"game_of_life_halting"})
"""Listed in :data:`CANNOT_CHECK` for reasoning-gym's own scoring, checked under ``hardened=True``
(its gold is a bool, judged by :func:`~rlvr_gym.verifiers.answer_types.typed_match`)."""


_THROUGH = "under hardened scoring the audit's {} exploits still get reasoning-gym's full marks (e.g. {})"
HARDENED_AUDIT_FAILS: dict[str, str] = {
    "cryptarithm": _THROUGH.format("hedging", "two answer tags, the gold last"),
    "fraction_simplification": _THROUGH.format("hedging", "'gold or wrong' in one tag"),
    "intermediate_integration": _THROUGH.format("hedging", "two answers, one wrong"),
    "kakurasu": _THROUGH.format("near_miss", "the grid negated"),
    "knights_knaves": _THROUGH.format("hedging and near_miss", "the statement negated"),
    "letter_jumble": _THROUGH.format("hedging", "'gold or wrong' in one tag"),
    "polynomial_equations": _THROUGH.format("hedging", "two answers, one wrong"),
    "polynomial_multiplication": _THROUGH.format("hedging", "'gold or wrong' in one tag"),
    "puzzle24": _THROUGH.format("echo", "another task's solution"),
    "quantum_lock": _THROUGH.format("hedging and near_miss", "the sequence negated"),
    "simple_integration": _THROUGH.format("hedging", "two answers, one wrong"),
    "sokoban": _THROUGH.format("hedging and near_miss", "the moves negated"),
    "spell_backward": _THROUGH.format("hedging", "'gold or wrong' in one tag"),
    "time_intervals": _THROUGH.format("hedging", "a tag and a box, the gold last"),
    "word_sorting": _THROUGH.format("hedging", "a tag and a box, the gold last"),
}
"""Datasets whose hardened scoring does not pass our audit (``bench/reasoning_gym_audit.py``,
three tasks each, 2026-11-27): reasoning-gym's own scorer, which hardened scoring still needs for
their answers (no number, bool or list of numbers), pays an exploit. Hardened refuses them."""


def cannot_check(hardened: bool) -> dict[str, str]:
    """The datasets that cannot be checked with this scoring, and why: with ``hardened``, those
    of :data:`CANNOT_CHECK` it does not fix and those of :data:`HARDENED_AUDIT_FAILS`."""
    if not hardened:
        return dict(CANNOT_CHECK)
    kept = {name: why for name, why in CANNOT_CHECK.items() if name not in HARDENED_CHECKS}
    return {**kept, **HARDENED_AUDIT_FAILS}


def env_id(name: str) -> str:
    return f"{NAMESPACE}/{name}-v0"


def extract_answer(text: str) -> str | None:
    """reasoning-gym's ``extract_answer`` (last ``<answer>\\s?(.*?)\\s?</answer>`` match, stripped),
    in one left-to-right pass of ``str.find`` instead of a lazy regex."""
    last, position = None, 0
    while (start := text.find(_OPEN, position)) >= 0:
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            break
        last, position = text[start + len(_OPEN) : end], end + len(_CLOSE)
    return None if last is None else last.strip()


@functools.cache
def _reasoning_gym() -> Any:
    try:
        import reasoning_gym
    except ImportError:
        raise NotAvailableError(
            f"the reasoning_gym/* envs need reasoning-gym=={VERSION}: pip install 'rlvr-gym[reasoning-gym]'"
        ) from None
    return reasoning_gym


class _Worker(Worker):
    """The budget worker without a standby: reasoning-gym's import costs seconds of CPU, and a
    standby would double that on every start; after a kill the next call starts a fresh one."""

    def _promote(self) -> None:
        if self._active is not None:
            self._active.kill()
        self._active = _Process(self.target, self.memory_mb, WORKER_ENVIRONMENT)
        self._standby = None


_worker = _Worker(WORKER_TARGET, memory_mb=WORKER_MEMORY_MB)
atexit.register(_worker.close)
_users: set[int] = set()
_users_lock = threading.Lock()


def _use(user: int) -> Worker:
    with _users_lock:
        _users.add(user)
    return _worker


def _release(user: int) -> None:
    """The shared worker stops when the last verifier that used it is closed."""
    with _users_lock:
        _users.discard(user)
        last = not _users
    if last:
        _worker.close()


class ReasoningGymScore:
    """reasoning-gym's ``score_answer`` as a verifier: out of process, bounded, Verdicts with reasons.

    ``passed`` is a score of 1.0 (reasoning-gym's "correct"); lower scores are ``wrong_answer``
    with the score kept (its partial credit). With ``strict_credit`` a score below 1.0 earns 0.
    With ``typed``, a gold of a known type (number, bool, list of numbers) is judged by
    :func:`~rlvr_gym.verifiers.answer_types.typed_match`, not by reasoning-gym.
    """

    def __init__(
        self, name: str, config: dict[str, Any], seed: int, size: int, *, timeout: float = SCORE_TIMEOUT,
        strict_credit: bool = False, typed: bool = False,
    ) -> None:  # fmt: skip
        self.name, self.config_json, self.seed, self.size = (
            name,
            json.dumps(config, sort_keys=True),
            seed,
            size,
        )
        self.timeout, self.strict_credit, self.typed = timeout, strict_credit, typed

    def __call__(self, completion: str, task: Task) -> Verdict:
        if len(completion) > MAX_COMPLETION_CHARS:
            return Verdict.fail(
                Reason.BAD_FORMAT, why=f"completion longer than {MAX_COMPLETION_CHARS} characters"
            )
        answer = extract_answer(completion)
        if answer is None:
            return Verdict.fail(Reason.NO_ANSWER, why="no <answer></answer> pair")
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.fail(
                Reason.BAD_FORMAT, answer[:80], why=f"answer longer than {MAX_ANSWER_CHARS} characters"
            )
        shown = answer[:500]
        gold = task.get("answer")
        judged = typed_match(answer, gold) if self.typed and isinstance(gold, str) else None
        if judged is not None:
            if judged:
                return Verdict.correct(shown, judged_by="answer type")
            return Verdict.fail(Reason.WRONG_ANSWER, shown, judged_by="answer type")
        outcome = self._call("score", int(task["index"]), answer, timeout=self.timeout)
        if outcome.status == "timeout":
            return Verdict.fail(
                Reason.TIMEOUT, shown, why=f"reasoning-gym's score_answer ran past {self.timeout:g} s"
            )
        if outcome.status != "ok" or not isinstance(outcome.value, int | float):
            # reasoning-gym raised, crashed or ran out of memory on this answer: the answer's failure
            detail = outcome.value if outcome.status == "error" else outcome.status
            return Verdict.fail(
                Reason.BAD_FORMAT, shown, why=f"reasoning-gym's score_answer failed: {detail}"
            )
        value = float(outcome.value)
        if value >= 1.0:
            return Verdict.correct(shown, rg_score=value)
        score = 0.0 if self.strict_credit or not math.isfinite(value) else max(0.0, value)
        return Verdict.fail(Reason.WRONG_ANSWER, shown, score=score, rg_score=value)

    def row(self, index: int) -> dict[str, str]:
        """Entry ``index``'s question and gold, made in the worker (see :mod:`.reasoning_gym_worker`)."""
        outcome = self._call("row", index, timeout=ROW_TIMEOUT)
        if outcome.status != "ok" or not isinstance(outcome.value, dict):
            detail = outcome.value if outcome.status == "error" else outcome.status
            raise RunFailedError(f"{env_id(self.name)}: reasoning-gym could not make entry {index}: {detail}")
        return outcome.value

    def _call(self, op: str, index: int, *args: Any, timeout: float) -> Any:
        worker = _use(id(self))
        try:
            worker.start()  # reasoning-gym's import takes seconds: never charge it to an answer's budget
        except RunFailedError as exc:
            raise NotAvailableError(f"reasoning-gym's scoring worker did not start: {exc}") from None
        return worker.call(
            op, self.name, self.config_json, self.seed, self.size, index, *args, timeout=timeout
        )

    def close(self) -> None:
        """Release the scoring worker (stopped once no open verifier uses it; restarts on use)."""
        _release(id(self))

    def __repr__(self) -> str:
        return f"ReasoningGymScore({self.name!r}, strict_credit={self.strict_credit}, typed={self.typed})"


class _Rows(GeneratedTasks):
    """Entries ``[offset, offset + size)`` of a reasoning-gym dataset as task rows, made on demand."""

    def __init__(self, env: ReasoningGymEnv, split: str, offset: int, size: int) -> None:
        self.env, self.split, self.offset, self.size = env, split, offset, size

    def task(self, index: int) -> dict[str, Any]:
        return self.env.row(self.split, self.offset + index)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(self.size))


@dataclass(frozen=True)
class ReasoningGymConfig(EnvConfig):
    """A bridged env's own knobs. The dataset's knobs (the fields of its reasoning-gym ``*Config``)
    are given beside them (``make(id, min_terms=3)``) and typed by that dataclass."""

    dataset: str = knob("", "the reasoning-gym dataset (the env id names it)")
    seed: int = knob(0, "the dataset's seed: tasks are a pure function of (seed, index)")
    train_size: int = knob(500, "train tasks")
    test_size: int = knob(100, "test tasks (the entries after the train ones)")
    hardened: bool = knob(
        False, "one answer, no partial credit; our equivalence where the answer type is known"
    )
    score_timeout: float = knob(SCORE_TIMEOUT, "seconds per scoring call (a worker killed at the deadline)")

    def validate(self) -> None:
        for name in ("train_size", "test_size"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if not self.score_timeout > 0:
            raise InvalidArgumentError(
                f"score_timeout must be a positive number of seconds, got {self.score_timeout!r}"
            )


def dataset_knobs(dataset: str, knobs: dict[str, Any]) -> dict[str, Any]:
    """``knobs`` for reasoning-gym's ``dataset``, each typed by its field in the dataset's own config
    dataclass (``"3"`` for an ``int`` field is 3); a name it has no field for is refused."""
    config_class = _reasoning_gym().factory.DATASETS[dataset][1]
    fields = {f.name for f in dataclasses.fields(config_class)} - {"seed", "size"}
    unknown = sorted(set(knobs) - fields)
    if unknown:
        raise InvalidArgumentError(f"{env_id(dataset)} has no knob(s) {unknown}; its knobs: {sorted(fields)}")
    try:
        hints = typing.get_type_hints(config_class)
    except Exception:  # noqa: BLE001 - a field type that does not resolve: its knobs pass untyped
        hints = {}
    typed = {}
    for name, value in knobs.items():
        try:
            typed[name] = convert(value, hints[name]) if name in hints else value
        except _NotConvertible:
            raise knob_error(name, value, hints[name], owner=env_id(dataset)) from None
    return typed


class ReasoningGymEnv(SingleTurnEnv):
    """A reasoning-gym dataset, scored by its own ``score_answer`` (optionally hardened)."""

    config_class: ClassVar[type[ReasoningGymConfig]] = ReasoningGymConfig

    def __init__(self, config: ReasoningGymConfig | None = None, /, **knobs: Any) -> None:
        own = {f.name for f in dataclasses.fields(ReasoningGymConfig)}
        config = configure(self, config, {k: v for k, v in knobs.items() if k in own})
        dataset, seed, hardened = config.dataset, config.seed, config.hardened
        rg = _reasoning_gym()
        system_prompt = (
            rg.utils.SYSTEM_PROMPTS["default"] if config.system_prompt is None else config.system_prompt
        )
        super().__init__(prompt_format=config.prompt_format, system_prompt=system_prompt)
        if dataset not in rg.factory.DATASETS:
            raise InvalidArgumentError(f"reasoning-gym has no dataset {dataset!r}")
        if hardened and dataset in cannot_check(hardened=True):
            raise InvalidArgumentError(
                f"{env_id(dataset)} cannot be checked, so hardened=True refuses it: "
                f"{cannot_check(hardened=True)[dataset]}"
            )
        config_knobs = dataset_knobs(dataset, {k: v for k, v in knobs.items() if k not in own})
        try:
            json.dumps(config_knobs)
        except TypeError as exc:
            raise InvalidTypeError(
                f"reasoning-gym knobs must be JSON values (lists, numbers, text): {exc}"
            ) from None
        train_size, test_size, score_timeout = config.train_size, config.test_size, config.score_timeout
        self.dataset_name, self.config, self.seed = dataset, config_knobs, seed
        self.sizes = {"train": train_size, "test": test_size}
        self.hardened = bool(hardened)
        self._dataset: Any = None
        self._rows: dict[tuple[str, int], dict[str, Any]] = {}
        self.dataset  # noqa: B018 - build it now, so a bad knob is an error at make()
        score = ReasoningGymScore(
            dataset,
            self.config,
            seed,
            train_size + test_size,
            timeout=float(score_timeout),
            strict_credit=self.hardened,
            typed=self.hardened,
        )
        self.reasoning_gym_score = score  # also makes the rows (in its worker)
        self.rubric = Rubric({"correct": SingleAnswer(score) if self.hardened else score})

    @property
    def dataset(self) -> Any:
        """The reasoning-gym dataset (built on first use; not pickled)."""
        if self._dataset is None:
            size = self.sizes["train"] + self.sizes["test"]
            try:
                self._dataset = _reasoning_gym().create_dataset(
                    self.dataset_name, seed=self.seed, size=size, **self.config
                )
            except (ValueError, TypeError, AssertionError) as exc:
                raise InvalidArgumentError(
                    f"{env_id(self.dataset_name)}: bad knobs {self.config}: {exc}"
                ) from None
        return self._dataset

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_dataset"], state["_rows"] = None, {}
        return state

    def row(self, split: str, index: int) -> dict[str, Any]:
        """Entry ``index`` of the dataset as a task row (JSON values only; metadata stays behind),
        made in the scoring worker once per instance (the last :data:`ROWS_KEPT` are kept); a new
        dict each call."""
        row = self._rows.get((split, index))
        if row is None:
            row = {
                **self.reasoning_gym_score.row(index),
                "index": index,
                "split": split,
                "dataset": self.dataset_name,
            }
            if len(self._rows) >= ROWS_KEPT:
                del self._rows[next(iter(self._rows))]
            self._rows[split, index] = row
        return dict(row)

    def load_tasks(self, split: str) -> Sequence[Task]:
        offset = 0 if split == "train" else self.sizes["train"]
        return _Rows(self, split, offset, self.sizes[split])

    def question(self, task: Task) -> str:
        return task["question"]

    def reference_completion(self, task: Task) -> str:
        return f"<answer>{task['answer']}</answer>"

    def wrong_completions(self, task: Task) -> list[str]:
        return [*super().wrong_completions(task), "<answer>definitely not the answer 0xC0FFEE</answer>"]


def make_env(**kwargs: Any) -> ReasoningGymEnv:
    """The registered entry point: every keyword goes to :class:`ReasoningGymEnv` (which checks
    the knobs against the dataset's config), so the registry does not filter reasoning-gym's knobs."""
    return ReasoningGymEnv(**kwargs)


def register_all() -> list[str]:
    """Register ``reasoning_gym/<name>-v0`` for every dataset of :data:`DATASET_NAMES` (no import)."""
    from rlvr_gym.envs.registration import register

    ids = []
    missing = (
        ""
        if importlib.util.find_spec("reasoning_gym") is not None  # finds, does not import, it
        else " (not installed: pip install 'rlvr-gym[reasoning-gym]')"
    )
    for name in DATASET_NAMES:
        register(
            env_id(name),
            "rlvr_gym.envs.reasoning_gym_bridge:make_env",
            description=f"reasoning-gym {VERSION} '{name}', scored by its own score_answer{missing}",
            dataset=name,
        )
        ids.append(env_id(name))
    return ids
