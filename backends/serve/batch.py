"""``POST /ID/score``: rewards for a batch of (task, completion) pairs in one request.

For trainers that only need rewards — the shape other reward servers take (OpenRLHF's remote
reward model posts ``{"query", "prompts", "labels"}`` and reads ``rewards``)::

    {"completions": ["... #### 42", ...],      # or "query": prompt + completion, with "prompts"
     "labels": [3, {"split": "test", "index": 7}, {"task": {...a task row...}}, ...],
     "split": "train"}                           # the split of bare integer labels (default: first)

    -> {"rewards": [1.0, 0.0, null, ...],        # null: unscored (a bad label, or the budget ran out)
        "scores": [...same...],
        "verdicts": [{"score", "passed", "reason", "answer", "details"} | null, ...],
        "errors": [null, null, "label 2: ...", ...]}

A label names a task of the server's env (``index``, or ``{"split", "index"}``), or carries a
whole task row (``{"task": {...}}``: the caller's own answer key, for data the server does not
hold). One bad item costs only itself: its reward is ``null`` with the reason in ``errors``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from rlvr_gym.backends.task_labels import task_of
from rlvr_gym.error import Error
from rlvr_gym.verifiers import Task, completion_text

if TYPE_CHECKING:
    from rlvr_gym.backends.serve.app import ServeOptions
    from rlvr_gym.backends.serve.session import HostedEnv


class ScoreRequest(BaseModel):
    """The request body; ``completions`` or ``query`` (with ``prompts`` stripped off its front)."""

    model_config = ConfigDict(extra="forbid")

    labels: list[Any]
    completions: list[str | dict[str, Any]] | None = None
    query: list[str] | None = None
    prompts: list[Any] | None = None
    split: str | None = None


class ScoreResponse(BaseModel):
    rewards: list[float | None]
    scores: list[float | None]
    verdicts: list[dict[str, Any] | None]
    errors: list[str | None]


def _completions(body: ScoreRequest) -> list[object]:
    if (body.completions is None) == (body.query is None):
        raise ValueError("give exactly one of 'completions' or 'query'")
    if body.completions is not None:
        return [c.get("content") or "" if isinstance(c, dict) else c for c in body.completions]
    queries = body.query or []
    if body.prompts is None:
        return list(queries)
    if len(body.prompts) != len(queries):
        raise ValueError(f"{len(queries)} queries but {len(body.prompts)} prompts")
    out: list[object] = []
    for query, prompt in zip(queries, body.prompts, strict=True):
        prefix = prompt if isinstance(prompt, str) else completion_text(prompt)
        out.append(query[len(prefix) :] if isinstance(prefix, str) and query.startswith(prefix) else query)
    return out


def score_router(hosted: HostedEnv, options: ServeOptions) -> Any:
    """The ``/score`` route for one hosted env, as a FastAPI router."""
    from fastapi import APIRouter, HTTPException

    router = APIRouter()

    @router.post("/score", response_model=ScoreResponse)
    async def score(body: ScoreRequest) -> ScoreResponse:
        try:
            completions = _completions(body)
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from None
        if len(completions) != len(body.labels):
            raise HTTPException(
                status_code=422, detail=f"{len(completions)} completions but {len(body.labels)} labels"
            )
        if len(completions) > options.max_batch_items:
            raise HTTPException(
                status_code=413,
                detail=f"{len(completions)} items; at most {options.max_batch_items} per request",
            )
        split = body.split or hosted.env.splits[0]
        errors: list[str | None] = [None] * len(completions)
        tasks: list[Task] = []
        items: list[int] = []
        for i, label in enumerate(body.labels):
            try:
                tasks.append(task_of(hosted.env, label, split))
                items.append(i)
            except Error as exc:
                errors[i] = f"label {i}: {exc}"
        verdicts: list[dict[str, Any] | None] = [None] * len(completions)
        if items:
            scored = await hosted.batcher.score([completions[i] for i in items], tasks)
            if hosted.journal is not None:
                request = str(uuid.uuid4())
                await hosted.journal.awrite(
                    {"env": hosted.env_id, "request": request, "item": i, "verdict": v and v.to_dict()}
                    for i, v in zip(items, scored, strict=True)
                )
            for i, verdict in zip(items, scored, strict=True):
                if verdict is None:
                    errors[i] = f"item {i}: unscored (the scoring budget ran out)"
                else:
                    verdicts[i] = verdict.to_dict()
        rewards = [None if v is None else v["score"] for v in verdicts]
        return ScoreResponse(rewards=rewards, scores=rewards, verdicts=verdicts, errors=errors)

    return router


__all__ = ["ScoreRequest", "ScoreResponse", "score_router"]
