"""``SingleAnswer``: a hedged completion passes only if every answer it commits to is right.

Answer extractors pick one answer — the last ``<answer>`` block, the last ``\\boxed{}``, the
tag before the box — so ``\\boxed{3} \\boxed{4}`` or ``#### 3 <answer>4</answer>`` passes for a
gold of 4: a policy learns to write several answers and let the extractor choose (the audit's
``hedging`` family finds this). Wrapping the correctness verifier closes it without changing
the extractor: each distinct committed answer is checked on its own, and all must pass — or,
taken together as one list, they must be the gold (a multi-part answer written one box a part).
"""

from __future__ import annotations

import re

from rlvr_gym.error import InvalidTypeError
from rlvr_gym.verifiers.math.extract import _SAYS, MAX_COMPLETION_CHARS, answer_phrase
from rlvr_gym.verifiers.protocol import Task, Verifier
from rlvr_gym.verifiers.verdict import Reason, Verdict

MAX_MARKERS = 16
"""More answer markers than this is not an answer but a spray: refused before any parsing."""

_HASHES = re.compile(r"####[ \t]*([^\n]*)")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _braced(text: str, start: int) -> str | None:
    """The contents of the brace group opened just before ``start``, or ``None`` if unbalanced."""
    depth = 1
    for position in range(start, len(text)):
        char = text[position]
        if char in "{}" and text[position - 1] != "\\":
            depth += 1 if char == "{" else -1
            if depth == 0:
                return text[start:position]
    return None


def committed_answers(text: str) -> list[str] | None:
    """Every answer ``text`` commits to, in order, distinct; ``None`` when there are too many.

    Found in linear time: ``<answer>`` blocks by splitting on the closing tag, ``\\boxed{}``
    contents (only after the marker count is known to be small), ``#### x`` lines, and — when
    there are several — "the answer is x" phrases.
    """
    lowered = text.lower()
    markers = (
        lowered.count("</answer>")
        + lowered.count("\\boxed")
        + lowered.count("\\fbox")
        + text.count("####")
        + len(says := list(_SAYS.finditer(text)))
    )
    if markers > MAX_MARKERS:
        return None
    found: list[str] = []
    segments = re.split(r"</answer>", text, flags=re.IGNORECASE)
    for segment in segments[:-1]:
        start = segment.lower().rfind("<answer>")
        if start >= 0:
            found.append(segment[start + len("<answer>") :])
    for match in _BOXED.finditer(text):
        inner = _braced(text, match.end())
        if inner is not None:
            found.append(inner)
    found += _HASHES.findall(text)
    # "The answer is 3. ... The answer is 4.": each phrase read as the extractor reads one.
    if len(says) > 1:
        ends = [m.start() for m in says[1:]] + [len(text)]
        found += [a for m, end in zip(says, ends, strict=True) if (a := answer_phrase(text[m.start() : end]))]
    distinct: dict[str, None] = {}
    for answer in found:
        answer = answer.strip()
        if answer:
            distinct.setdefault(answer, None)
    return list(distinct)


class SingleAnswer:
    """Wraps a correctness verifier: several committed answers pass only if each one passes."""

    def __init__(self, inner: Verifier) -> None:
        if not callable(inner):
            raise InvalidTypeError(f"SingleAnswer wraps a verifier, got {inner!r}")
        self.inner = inner

    def __call__(self, completion: str, task: Task) -> Verdict:
        if len(completion) > MAX_COMPLETION_CHARS:  # the marker scan is linear, but 10 MB took 1 s
            return Verdict.fail(
                Reason.BAD_FORMAT, why=f"completion longer than {MAX_COMPLETION_CHARS} characters"
            )
        answers = committed_answers(completion)
        if answers is None:
            return Verdict.fail(Reason.BAD_FORMAT, why=f"more than {MAX_MARKERS} answer markers")
        verdict = self.inner(completion, task)
        if not verdict.passed or len(answers) <= 1:
            return verdict
        wrong = next((a for a in answers if not self.inner(f"<answer>{a}</answer>", task).passed), None)
        if wrong is None:
            return verdict
        # Several boxes can be one answer (``\\boxed{1}\\boxed{2}`` for a gold of ``1, 2``): that
        # passes only if the answers *together* are the gold, which a hedge (3 or 4 for 4) is not.
        if self.inner(f"<answer>{', '.join(answers)}</answer>", task).passed:
            return verdict
        return Verdict.fail(
            Reason.WRONG_ANSWER,
            wrong,
            why="several answers given and not all are correct",
            answers=answers[:MAX_MARKERS],
        )

    def __getattr__(self, name: str) -> object:
        """The inner verifier's other attributes (``warm_up``, ``timeout``...) stay reachable."""
        if name == "inner":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"SingleAnswer({self.inner!r})"
