"""Signs that an eval scored something other than what the model wrote.

A server whose reply parser does not match the model's chat template hands back the rendered
prompt (system prompt, question, role markers) as the "completion" — and a system prompt that
shows the answer format (``<answer>42</answer>``) then earns reward the model never wrote. A
server that ignores the request's temperature decodes greedily, so ``n`` samples are one sample
``n`` times and pass@k means pass@1. Neither raises anywhere; both are cheap to see in the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlvr_gym.envs.env import Observation

MIN_ECHO_CHARS = 20
"""A prompt shorter than this is not called echoed: a short question restated is a fair answer."""


def prompt_pieces(prompt: Observation) -> list[str]:
    """The texts a rendering of ``prompt`` shows, in order (each message's content, or the text)."""
    if isinstance(prompt, str):
        return [prompt.strip()] if prompt.strip() else []
    return [str(m.get("content", "")).strip() for m in prompt if str(m.get("content", "")).strip()]


def echoes_prompt(prompt: Observation, completion: str) -> bool:
    """Whether ``completion`` holds the whole prompt: every piece of it, in order (however the
    template rendered the roles between them)."""
    pieces = prompt_pieces(prompt)
    if sum(len(p) for p in pieces) < MIN_ECHO_CHARS:
        return False
    position = 0
    for piece in pieces:
        found = completion.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def completion_text(completion: Any) -> str:
    """A rollout's completion as one text: a tool episode's messages (what the model wrote and
    the tools replied) joined in order, a single-step completion as it is."""
    if isinstance(completion, list):
        return "\n".join(str(m.get("content") or "") if isinstance(m, dict) else str(m) for m in completion)
    return completion or ""


def sample_warnings(rows: Sequence[dict[str, Any]], n: int, temperature: float) -> dict[str, Any]:
    """Counts and one-line warnings for an eval's rollout rows (``summary.json`` keeps them).

    ``echoed_prompt``: rollouts whose completion holds the whole prompt. ``identical_samples``:
    tasks whose ``n > 1`` samples are all the same text at ``temperature > 0``; warned about when
    every task is so (a confident model can repeat itself on some tasks, not on all of them).
    """
    echoed = sum(echoes_prompt(r["prompt"], completion_text(r["completion"])) for r in rows)
    by_task: dict[tuple[str, int], list[str]] = {}
    for r in rows:
        by_task.setdefault((r["split"], r["index"]), []).append(completion_text(r["completion"]))
    groups = [texts for texts in by_task.values() if len(texts) > 1]
    identical = sum(len(set(texts)) == 1 for texts in groups)
    warnings = []
    if echoed:
        warnings.append(
            f"{echoed}/{len(rows)} completions contain the whole prompt: the engine returned the rendered "
            "prompt with (or instead of) the model's text, and the scores measure the prompt. A server "
            "must split the reply by the model's chat template (docs/runs.md, --engine openai)"
        )
    if temperature > 0 and n > 1 and len(groups) >= 2 and identical == len(groups):
        warnings.append(
            f"all {n} samples were identical on every one of {len(groups)} tasks at temperature "
            f"{temperature:g}: the engine is decoding greedily, so pass@k is pass@1 (transformers serve "
            "samples only where the model's generation_config has do_sample=true)"
        )
    return {"echoed_prompt": echoed, "identical_samples": identical, "warnings": warnings}


__all__ = ["MIN_ECHO_CHARS", "completion_text", "echoes_prompt", "prompt_pieces", "sample_warnings"]
