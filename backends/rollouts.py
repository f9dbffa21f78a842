"""Rollout logs: one record type and one writer for every ``rollouts.jsonl``.

Training samples (written by the reward functions every ``rollout_log_steps``) and eval rollouts
(written by ``evaluate``, one per scored completion) are the same :class:`Rollout` and go
through the same :class:`RolloutLog`: each line is fsync'd before the next is scored, a line cut
short by a kill is trimmed on reopen, and a rollout is keyed by ``(step, split, index, sample)``
(``step`` is ``None`` for an eval) so a resumed run neither re-scores nor re-writes what the log
already holds. This lives in ``backends`` because training writes it; evals in ``trainers`` reuse it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rlvr_gym.backends.run_layout import ROLLOUTS_FILE
from rlvr_gym.error import InvalidArgumentError

RolloutKey = tuple[int | None, str, int, int]


@dataclass(frozen=True)
class Rollout:
    """One scored completion: where its task is, what the policy wrote, and the Verdict's dict."""

    split: str
    index: int
    sample: int
    prompt: Any
    completion: Any
    verdict: dict[str, Any] | None  # None: left unscored (the batch overran its budget)
    env: str | None = None  # the exact version scored (gsm8k-v0), for an eval
    step: int | None = None  # the training step that sampled it; None for an eval
    turns: list[dict[str, Any]] | None = None  # a tool env's record of each turn (tool calls, feedback)

    def to_dict(self) -> dict[str, Any]:
        """The JSON line: ``env`` and ``step`` only where known, so eval and training rows stay apart."""
        row: dict[str, Any] = {} if self.env is None else {"env": self.env}
        if self.step is not None:
            row["step"] = self.step
        row.update(
            split=self.split,
            index=self.index,
            sample=self.sample,
            prompt=self.prompt,
            completion=self.completion,
            verdict=self.verdict,
        )
        if self.turns is not None:
            row["turns"] = self.turns
        return row


def episode_turns(env: Any) -> list[dict[str, Any]]:
    """A finished tool episode's turn records for its rollout row; the last one says
    ``out_of_turns`` when the episode ended without a final answer."""
    turns = [dict(turn) for turn in env._turns]
    if turns and env.out_of_turns_ended:
        turns[-1]["out_of_turns"] = True
    return turns


def rollout_key(row: dict[str, Any]) -> RolloutKey:
    step = row.get("step")
    return (None if step is None else int(step), str(row["split"]), int(row["index"]), int(row["sample"]))


def read_rollouts(path: str | Path) -> list[dict[str, Any]]:
    """Every whole row of a rollout log (a torn last line is skipped); ``[]`` when absent."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def find_rollout_logs(run_dir: str | Path) -> Iterator[Path]:
    """Rollout logs anywhere under ``run_dir`` (evals write them in their own folders)."""
    yield from sorted(Path(run_dir).rglob(ROLLOUTS_FILE))


class RolloutLog:
    """Append-only rollout log that remembers which rollouts are already done.

    ``duplicates="error"`` (an eval: writing one rollout twice is a bug) refuses a key the log
    holds; ``"skip"`` (training, where a resumed run re-samples the step it stopped in) drops it.
    """

    def __init__(self, path: str | Path, *, duplicates: Literal["error", "skip"] = "error") -> None:
        if duplicates not in ("error", "skip"):
            raise InvalidArgumentError(f"duplicates must be 'error' or 'skip', got {duplicates!r}")
        self.path = Path(path)
        self.duplicates = duplicates
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._trim_torn_tail()
        self.rows: dict[RolloutKey, dict[str, Any]] = {rollout_key(r): r for r in read_rollouts(self.path)}
        self._out = self.path.open("a", encoding="utf-8")

    def _trim_torn_tail(self) -> None:
        """Cut a partial last line (the process was killed mid-write) so appends start clean."""
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            self.path.write_bytes(data[: data.rfind(b"\n") + 1])

    def __contains__(self, key: RolloutKey) -> bool:
        return key in self.rows

    def append(self, rollout: Rollout | dict[str, Any]) -> bool:
        """Write one rollout and fsync it before the next one is scored; ``False`` if it was skipped."""
        return self.extend([rollout]) == 1

    def extend(self, rollouts: list[Rollout] | list[dict[str, Any]]) -> int:
        """Write the rollouts not yet in the log with one fsync; returns how many were written."""
        new: dict[RolloutKey, dict[str, Any]] = {}
        for rollout in rollouts:
            row = rollout.to_dict() if isinstance(rollout, Rollout) else rollout
            key = rollout_key(row)
            if key in self.rows or key in new:
                if self.duplicates == "error":
                    raise InvalidArgumentError(f"rollout {key} is already in {self.path}")
                continue
            new[key] = row
        if new:
            self._out.write(
                "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in new.values())
            )
            self._out.flush()
            os.fsync(self._out.fileno())
            self.rows.update(new)
        return len(new)

    def truncate(self, after_step: int) -> None:
        """Drop training rows past ``after_step`` (a run resumed from that checkpoint logs them again)."""
        kept = [row for row in self.rows.values() if row.get("step") is None or row["step"] <= after_step]
        self._out.close()
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            out.write("".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in kept))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
        self.rows = {rollout_key(r): r for r in kept}
        self._out = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> RolloutLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
