"""``audit(env)``, the reward-hack audit: run the exploit catalogues against an env's own scoring.

The catalogues are :mod:`rlvr_gym.verifiers.exploits` (exploit completions, for any env) and
:mod:`rlvr_gym.envs.tool_exploits` (scripted episodes, for tool envs); this module runs them.

A sample of tasks is drawn deterministically from ``seed``; for each, the catalogue's exploits are
built from the task's question, the env's system prompt and reference completion, and scored
through ``env.verify_batch`` — the rubric's batch path, the one training and eval use. The
result says, per family, how often an exploit passed and what it earned.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_gym.envs.config import settings_of
from rlvr_gym.envs.env import Env, unwrap
from rlvr_gym.envs.tool_env import MultiTurnEnv
from rlvr_gym.envs.tool_exploits import TOOL_FAMILIES, exploit_episodes, score_episodes
from rlvr_gym.error import (
    AuditFailedError,  # noqa: F401 - defined with the whole tree
    InvalidArgumentError,
    InvalidTypeError,
)
from rlvr_gym.verifiers import Reason, Task, Verdict
from rlvr_gym.verifiers.exploits import (
    FAMILIES,
    MAX_REWARD,
    Exploit,
    FamilyResult,
    Subject,
    exploits_for,
    failures,
    summarize,
    warnings,
)

BatchScore = Callable[[Sequence[object], Sequence[Task]], list[Verdict]]
"""Scores a batch in order, as ``env.verify_batch`` does (a scorer's may stand in: ``backends.scoring``)."""

FAST_TASKS = 3
"""Tasks the fast audit (the one ``train`` runs first) samples: a few seconds even for code envs."""
BATCH_TIMEOUT = 600.0
"""Seconds the audit's one ``env.verify_batch`` call may take before the audit stops waiting."""
ITEM_TIMEOUT = 30.0
"""After a batch overran: seconds each item may take when re-scored alone."""
MAX_HUNG_ITEMS = 3
"""After this many items hung alone, the rest are not scored (each would cost ``ITEM_TIMEOUT``)."""


@dataclass
class AuditReport:
    """Per-family results of one audit, and how it was drawn."""

    env: str
    split: str
    task_indices: list[int]
    seed: int
    fast: bool
    threshold: float
    seconds: float
    families: dict[str, FamilyResult] = field(default_factory=dict)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """The env's settings, typed (registered defaults and the caller's knobs): what was audited."""

    @property
    def ok(self) -> bool:
        """No hole: strictness alone (``equivalent`` renderings rejected) only warns."""
        return not any(r.blocks for r in self.families.values())

    def failures(self) -> list[str]:
        return failures(self.families)

    def warnings(self) -> list[str]:
        return warnings(self.families)

    def to_dict(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "env_kwargs": self.env_kwargs,
            "ok": self.ok,
            "split": self.split,
            "task_indices": self.task_indices,
            "seed": self.seed,
            "fast": self.fast,
            "threshold": self.threshold,
            "seconds": round(self.seconds, 3),
            "failures": self.failures(),
            "warnings": self.warnings(),
            "families": {name: r.to_dict() for name, r in self.families.items()},
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    def render(self) -> str:
        """A table: one line per family, then the failures with an example each."""
        head = f"{'family':<26} {'kind':<11} {'n':>4} {'pass rate':>9} {'mean':>6} {'max':>6}  verdict"
        lines = [
            f"audit of {self.env} ({self.split}, tasks {self.task_indices}, {self.seconds:.1f} s)",
            f"env settings: {json.dumps(self.env_kwargs, sort_keys=True)}",
            head,
        ]
        for r in self.families.values():
            kind = "must pass" if r.must_pass else "exploit"
            verdict = "ok" if r.ok else "FAIL" if r.blocks else "WARN"
            lines.append(
                f"{r.family:<26} {kind:<11} {r.count:>4} {r.pass_rate:>9.2f} {r.mean_reward:>6.3f} "
                f"{r.max_reward:>6.3f}  {verdict}"
            )
        for r in self.families.values():
            if not r.ok:
                lines.append(
                    f"  {r.family}: e.g. {r.example.get('name')}: {r.example.get('completion')!r:.200}"
                )
        lines += [f"WARN: {line}" for line in self.warnings()]
        lines.append("PASS: no exploit got through" if self.ok else "FAIL: " + "; ".join(self.failures()))
        return "\n".join(lines)


def _sample(count: int, n_tasks: int, seed: int) -> list[int]:
    indices = list(range(count))
    random.Random(f"rlvr-gym/audit/{seed}").shuffle(indices)
    return sorted(indices[: min(n_tasks, count)])


def _subjects(env: Env, tasks: Sequence[Task], indices: list[int]) -> list[Subject]:
    references = [env.reference_completion(tasks[i]) for i in indices]
    subjects = []
    for position, index in enumerate(indices):
        task = tasks[index]
        other = references[(position + 1) % len(indices)] if len(indices) > 1 else None
        if other is None:  # one task sampled: borrow a neighbour for the echo family
            other = env.reference_completion(tasks[(index + 1) % len(tasks)]) if len(tasks) > 1 else None
        subjects.append(
            Subject(
                task=task,
                question=env.question(task),
                reference=references[position],
                system_prompt=env.system_prompt,
                other_reference=other,
                code="```" in references[position],  # a fenced program: the code-harness families apply
            )
        )
    return subjects


def _within(seconds: float, call: Any) -> tuple[bool, Any]:
    """``(True, call())`` if it returns within ``seconds``, else ``(False, None)``.

    The call runs in a daemon thread: a verifier that hangs cannot be stopped from Python, so it is
    left behind (a daemon does not keep the process alive) and the audit goes on without it. An
    exception from the call is re-raised here.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="rlvr-gym-audit-score", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box["value"]


def _hung(seconds: float, why: str) -> Verdict:
    """A hang is the verifier's failure, and the audit's finding: an ``error`` verdict."""
    return Verdict.fail(Reason.ERROR, error=f"the verifier hung: {why}", hung_after_s=round(seconds, 3))


def _score(
    score: BatchScore,
    completions: list[str],
    tasks: list[Task],
    *,
    batch_timeout: float = BATCH_TIMEOUT,
    item_timeout: float = ITEM_TIMEOUT,
) -> list[tuple[Verdict, float]]:
    """Verdicts, each with seconds per item, from one batch call of ``score`` under a deadline.

    If the batch overruns ``batch_timeout``, each item is re-scored alone under ``item_timeout``:
    the items that hang get ``error`` verdicts naming the hang, and after :data:`MAX_HUNG_ITEMS`
    hangs the rest are reported unscored, so the audit always ends.
    """
    started = time.perf_counter()
    finished, verdicts = _within(batch_timeout, lambda: score(completions, tasks))
    if finished:
        each = (time.perf_counter() - started) / max(1, len(completions))
        return [(v, each) for v in verdicts]
    scored: list[tuple[Verdict, float]] = []
    hangs = 0
    for completion, task in zip(completions, tasks, strict=True):
        if hangs >= MAX_HUNG_ITEMS:
            scored.append((_hung(0.0, f"not scored: {hangs} items already hung alone"), 0.0))
            continue
        item_started = time.perf_counter()
        done, verdict = _within(item_timeout, lambda c=completion, t=task: score([c], [t])[0])
        seconds = time.perf_counter() - item_started
        if not done:
            hangs += 1
            verdict = _hung(
                seconds, f"no verdict within {item_timeout:g} s (the batch overran {batch_timeout:g} s)"
            )
        scored.append((verdict, seconds))
    return scored


def audit(
    env: Env,
    n_tasks: int = 8,
    seed: int = 0,
    *,
    split: str | None = None,
    families: Iterable[str] | None = None,
    fast: bool = False,
    threshold: float = MAX_REWARD,
    batch_timeout: float = BATCH_TIMEOUT,
    item_timeout: float = ITEM_TIMEOUT,
    score: BatchScore | None = None,
    skip: Iterable[str] = (),
) -> AuditReport:
    """Run the exploit catalogue on ``n_tasks`` tasks of ``env`` drawn with ``seed``.

    ``families`` names the families to run (default: all); ``skip`` leaves some out (``train``'s
    ``audit_skip``: one known strict family, not the whole audit).

    ``fast`` leaves out the slow exploits (sleeping past the limit, 1 MB completions), for the
    check ``train`` runs before spending a GPU hour. An exploit fails the audit when it passes
    or earns more than ``threshold``; a metamorphic case (gold, equivalent rendering) fails it
    when it does not pass; any verifier error fails it. Scoring is bounded (``batch_timeout``,
    then ``item_timeout`` per item): a verifier that hangs is a failed finding, not a hung audit.
    ``score`` scores the batch in place of ``env.verify_batch`` (a scorer's, e.g. Ray
    actors holding the same env). Raises nothing on a failed audit: read ``report.ok``
    (``train`` raises :class:`AuditFailedError`).
    """
    given, env = env, unwrap(env)  # gymnasium.make's env: the one inside its wrappers
    if env is None:
        raise InvalidTypeError(f"audit needs an rlvr_gym env (rlvr_gym.make(...)), got {type(given).__name__}")
    if isinstance(n_tasks, bool) or not isinstance(n_tasks, int) or n_tasks < 1:
        raise InvalidArgumentError(f"n_tasks must be an integer >= 1, got {n_tasks!r}")
    if not 0.0 <= threshold < 1.0:
        raise InvalidArgumentError(f"threshold must be in [0, 1), got {threshold!r}")
    split = split or ("test" if "test" in env.splits else env.splits[0])
    started = time.perf_counter()
    tasks = env.tasks(split)
    indices = _sample(len(tasks), n_tasks, seed)
    rows: list[tuple[int, Exploit, Task]] = []
    families = None if families is None else list(families)
    skip = list(skip)
    if skip:
        known = [*FAMILIES, *TOOL_FAMILIES]
        unknown = [f for f in skip if f not in known]
        if unknown:
            raise InvalidArgumentError(f"cannot skip unknown audit families {unknown}; known: {known}")
        families = [f for f in (families or known) if f not in skip]
    completion_families = None if families is None else [f for f in families if f not in TOOL_FAMILIES]
    for index, subject in zip(indices, _subjects(env, tasks, indices), strict=True):
        exploits = exploits_for(subject, completion_families, fast=fast)
        if index != indices[0]:  # the time-limit exploit costs a full limit: one task is proof enough
            exploits = [e for e in exploits if e.name != "sleep_past_limit"]
        rows += [(index, e, subject.task) for e in exploits]
    for name, value in (("batch_timeout", batch_timeout), ("item_timeout", item_timeout)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
            raise InvalidArgumentError(f"{name} must be a positive number of seconds, got {value!r}")
    scored = _score(
        score or env.verify_batch,
        [e.completion for _, e, _ in rows],
        [t for _, _, t in rows],
        batch_timeout=batch_timeout,
        item_timeout=item_timeout,
    )
    played: list[tuple[int, Exploit, Verdict, float]] = []
    if isinstance(env, MultiTurnEnv):  # tool envs: scripted episodes through step()
        subjects = _subjects(env, tasks, indices)
        episodes_ = [
            (i, e, a) for i, s in zip(indices, subjects, strict=True) for e, a in exploit_episodes(env, s, families)
        ]
        played = score_episodes(env, split, episodes_)
    results = summarize(
        [(i, e, v, s) for (i, e, _), (v, s) in zip(rows, scored, strict=True)] + played, threshold=threshold
    )
    return AuditReport(
        env=env.id,
        split=split,
        task_indices=indices,
        seed=seed,
        fast=fast,
        threshold=threshold,
        seconds=time.perf_counter() - started,
        families=results,
        env_kwargs=settings_of(env),
    )


def fast_audit(
    env: Env, seed: int = 0, score: BatchScore | None = None, skip: Iterable[str] = ()
) -> AuditReport:
    """The cheap audit ``train`` runs first: :data:`FAST_TASKS` tasks, slow exploits left out,
    the ``skip`` families too."""
    return audit(env, n_tasks=FAST_TASKS, seed=seed, fast=True, score=score, skip=skip)


__all__ = ["FAST_TASKS", "AuditFailedError", "AuditReport", "audit", "fast_audit", "settings_of"]
