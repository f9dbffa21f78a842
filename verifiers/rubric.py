"""Rubric: several verifiers, weighted into one reward, each still reported on its own."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rlvr_gym.error import InvalidArgumentError, InvalidTypeError
from rlvr_gym.verifiers.frozen import FrozenDict
from rlvr_gym.verifiers.protocol import Task, Verifier, run_verifier_batch
from rlvr_gym.verifiers.verdict import Reason, Verdict


class Rubric:
    """Weighted verifiers. One of them (``passed_by``, the first by default) decides ``passed``.

    The total score is the weighted *mean* of the component scores, so a completion that
    satisfies every component scores exactly 1.0. Trainers that sum rewards themselves (TRL's
    ``reward_weights``) should use :attr:`normalized_weights` to get the same total.

    A batch passes through each component whole (:meth:`verify_batch`): a component with a batch
    path of its own (the code verifier) runs it in one call, the others item by item.

    >>> rubric = Rubric({"correct": NumberMatch(), "format": TagFormat()}, weights={"format": 0.2})
    """

    def __init__(
        self,
        components: Mapping[str, Verifier],
        *,
        weights: Mapping[str, float] | None = None,
        passed_by: str | None = None,
    ) -> None:
        if not components:
            raise InvalidArgumentError("Rubric needs at least one component verifier")
        for name, verifier in components.items():
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(f"Rubric component names must be non-empty strings, got {name!r}")
            if not callable(verifier):
                raise InvalidTypeError(f"Rubric component {name!r} is not callable: {verifier!r}")
        weights = dict(weights or {})
        unknown = set(weights) - set(components)
        if unknown:
            raise InvalidArgumentError(
                f"weights name unknown components {sorted(unknown)}; have {list(components)}"
            )
        resolved = {name: float(weights.get(name, 1.0)) for name in components}
        for name, weight in resolved.items():
            if not math.isfinite(weight) or weight < 0:
                raise InvalidArgumentError(f"weight of {name!r} must be a finite number >= 0, got {weight}")
        total = sum(resolved.values())
        if total <= 0:
            raise InvalidArgumentError("at least one Rubric weight must be positive")
        passed_by = next(iter(components)) if passed_by is None else passed_by
        if passed_by not in components:
            raise InvalidArgumentError(f"passed_by={passed_by!r} is not a component; have {list(components)}")
        self.components: Mapping[str, Verifier] = FrozenDict(dict(components))
        self.weights: Mapping[str, float] = FrozenDict(resolved)
        self.normalized_weights: Mapping[str, float] = FrozenDict(
            {name: weight / total for name, weight in resolved.items()}
        )
        self.passed_by = passed_by

    def score_components(self, completion: object, task: Task) -> dict[str, Verdict]:
        """Each component's own Verdict (bugs already turned into ``error`` verdicts)."""
        return self.score_components_batch([completion], [task])[0]

    def score_components_batch(
        self, completions: Sequence[object], tasks: Sequence[Task]
    ) -> list[dict[str, Verdict]]:
        """Each item's per-component Verdicts; each component sees the batch whole."""
        by_name = {name: run_verifier_batch(v, completions, tasks) for name, v in self.components.items()}
        return [{name: verdicts[i] for name, verdicts in by_name.items()} for i in range(len(completions))]

    def combine(self, verdicts: Mapping[str, Verdict]) -> Verdict:
        """One Verdict from per-component verdicts: weighted score, pass/reason from ``passed_by``.

        A verifier error in any component makes the whole verdict an ``error``: a bug must not
        be diluted into a slightly lower reward.
        """
        deciding = verdicts[self.passed_by]
        score = sum(self.normalized_weights[name] * verdicts[name].score for name in self.components)
        errors = {n: v.details.get("error") for n, v in verdicts.items() if v.reason is Reason.ERROR}
        details = {
            "scores": {name: v.score for name, v in verdicts.items()},
            "reasons": {name: v.reason.value for name, v in verdicts.items()},
        }
        if errors:
            return Verdict.fail(Reason.ERROR, deciding.answer, score=0.0, errors=errors, **details)
        score = min(1.0, max(0.0, score))  # guard float round-off at the ends of [0, 1]
        return Verdict(score, deciding.passed, deciding.reason, deciding.answer, details)

    def verify_batch(self, completions: Sequence[object], tasks: Sequence[Task]) -> list[Verdict]:
        """One combined Verdict per (completion, task) pair: the batch path of every scorer."""
        return [self.combine(parts) for parts in self.score_components_batch(completions, tasks)]

    def __call__(self, completion: str, task: Task) -> Verdict:
        return self.verify_batch([completion], [task])[0]

    def close(self) -> None:
        """Release what the components hold (worker processes); each restarts on next use."""
        for verifier in self.components.values():
            close = getattr(verifier, "close", None)
            if callable(close):
                close()

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}×{w:g}" for n, w in self.weights.items())
        return f"Rubric({parts}; passed_by={self.passed_by!r})"
