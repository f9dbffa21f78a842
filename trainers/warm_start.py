"""A short supervised warm start on an env's reference answers.

A randomly initialised tiny model never produces a correct answer, so every GRPO group has
zero reward variance and nothing is learnt. A few hundred supervised steps on the env's own
reference completions give it a policy worth reinforcing. This is a stated shortcut for demos
and tests, not part of GRPO.

A tool env's warm start is on its reference *episodes* (``env.reference_episode``), played through
``env.step`` so the tool replies are the real ones, rendered with the chat template and the
tools' schemas as TRL renders them; the loss is on the assistant turns only. ``tool_fraction``
below 1 makes the rest of those episodes direct answers (the reference answer, no tool call): the
warm-started policy then calls the tools in about that share of episodes, and GRPO has one large
decision to select (calling, which a tiny model needs to be right, against answering from its head).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from rlvr_gym.backends.console import announce
from rlvr_gym.backends.run_layout import WARM_START_DONE_FILE
from rlvr_gym.envs import Env, MultiTurnEnv
from rlvr_gym.error import InvalidArgumentError, RunFailedError

EPISODE_TASKS = 256
"""Reference episodes played once and reused by a tool env's warm start (a tool call may cost a
sandbox run). Enough distinct tasks that copying the question into a call is learnt as copying:
with 32, big-add's tiny model saw 64 numbers and wrote those."""

TIMED_STEPS = 5


def warm_start(
    model_path: str | Path,
    env: Env,
    out_dir: str | Path,
    *,
    steps: int,
    batch_size: int = 16,
    learning_rate: float = 3e-3,
    seed: int = 0,
    tool_fraction: float = 1.0,
    done_marker: dict[str, Any] | None = None,
) -> Path:
    """Fine-tune ``model_path`` on (prompt, reference) pairs of ``env``'s first split; save to ``out_dir``.

    Loss is on the completion tokens only (prompt tokens are masked), as in SFT. After
    :data:`TIMED_STEPS` steps the time left is announced, measured. ``done_marker`` (the
    settings that made it) is written to ``out_dir/warm_start.json`` once everything is saved,
    so a run killed later reuses this warm start (:func:`finished_warm_start`) instead of redoing it.
    ``tool_fraction``: on a tool env, the share of episodes that call the tools (see the module's doc).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if steps < 1:
        raise InvalidArgumentError(f"steps must be >= 1, got {steps}")
    if not 0 <= tool_fraction <= 1:
        raise InvalidArgumentError(f"tool_fraction must lie in [0, 1], got {tool_fraction}")
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    model.train()
    tasks = env.tasks(env.splits[0])
    rng = random.Random(seed)
    episodes: list[tuple[list[int], list[int]]] = []
    if isinstance(env, MultiTurnEnv):
        episodes = reference_episodes(tokenizer, env, rng, tool_fraction=tool_fraction)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 20) * (1 - s / steps)
    )
    started = time.perf_counter()
    for step in range(steps):
        if step == TIMED_STEPS and steps > 2 * TIMED_STEPS:  # a measured estimate, not a guess
            rate = (time.perf_counter() - started) / TIMED_STEPS
            announce(f"warm start: {rate:.2f} s a step here, about {rate * (steps - step):.0f} s to go")
        if episodes:
            rows = [episodes[rng.randrange(len(episodes))] for _ in range(batch_size)]
        else:
            rows = [_encode(tokenizer, env, tasks[rng.randrange(len(tasks))]) for _ in range(batch_size)]
        loss = _batch_loss(model, rows, tokenizer.pad_token_id, head_on_labels=bool(episodes))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    if done_marker is not None:  # last: a folder killed while saving has no marker, and is redone
        (out / WARM_START_DONE_FILE).write_text(json.dumps(done_marker, sort_keys=True) + "\n", encoding="utf-8")
    return out


def _batch_loss(
    model: Any, rows: list[tuple[list[int], list[int]]], pad: int, *, head_on_labels: bool
) -> Any:
    """Mean next-token loss on the labelled tokens. ``head_on_labels``: the LM head runs on those
    positions only — on a tool env's episodes (a ~250-token prompt with tool schemas, ~30 labelled
    tokens) the head over every position is most of a step's cost. Single-step envs keep the
    model's own loss (the same value; their demo's figures were measured with it)."""
    import torch

    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in rows])
    labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows])
    attention = (torch.arange(width)[None, :] < torch.tensor([len(ids) for ids, _ in rows])[:, None]).long()
    if not head_on_labels:
        return model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
    shared = _shared_context(rows)
    if shared:
        return _loss_past_shared_context(model, input_ids, attention, labels, shared)
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention).last_hidden_state
    return _labelled_loss(model, hidden, labels[:, 1:])


def _labelled_loss(model: Any, hidden: Any, targets: Any) -> Any:
    """Cross-entropy of the LM head on the positions whose next token is labelled (``hidden``'s
    last position predicts nothing)."""
    import torch

    keep = targets != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][keep])
    return torch.nn.functional.cross_entropy(logits.float(), targets[keep])


def _shared_context(rows: list[tuple[list[int], list[int]]]) -> int:
    """Tokens every row begins with, short of the first labelled token's predecessor: the system
    prompt and the tools' schemas, the same in every episode of a tool env (~80% of its tokens)."""
    first_ids = rows[0][0]
    shared = min(len(ids) for ids, _ in rows)
    for ids, labels in rows:
        shared = next((i for i in range(shared) if ids[i] != first_ids[i]), shared)
        labelled = next((i for i, lab in enumerate(labels) if lab != -100), len(labels))
        shared = min(shared, labelled - 1)
    return max(shared, 0)


def _loss_past_shared_context(model: Any, input_ids: Any, attention: Any, labels: Any, shared: int) -> Any:
    """:func:`_batch_loss` with the rows' common first ``shared`` tokens run once, not once a row:
    their keys and values are repeated across the batch (gradients flow back through both), and
    only the rest of each row runs batched. The same loss up to float rounding, for a fraction of
    the cost: a tool env's warm start step is most of its time on the same prompt."""
    import torch

    decoder = model.get_decoder()
    cache = decoder(input_ids=input_ids[:1, :shared], use_cache=True).past_key_values
    cache.batch_repeat_interleave(input_ids.shape[0])
    width = input_ids.shape[1]
    positions = torch.arange(shared, width)
    hidden = decoder(
        input_ids=input_ids[:, shared:],
        attention_mask=attention,
        past_key_values=cache,
        position_ids=positions[None, :].expand(input_ids.shape[0], -1),
        cache_position=positions,
        use_cache=True,
    ).last_hidden_state
    return _labelled_loss(model, hidden, labels[:, shared + 1 :])


def finished_warm_start(out_dir: str | Path, marker: dict[str, Any]) -> bool:
    """Whether ``out_dir`` holds a warm start that finished with exactly these settings."""
    path = Path(out_dir) / WARM_START_DONE_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(marker, sort_keys=True))
    except (OSError, ValueError):
        return False


def _encode(tokenizer, env: Env, task) -> tuple[list[int], list[int]]:
    prompt = env.prompt(task)
    if isinstance(prompt, str):
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    else:
        prompt_ids = tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
    answer_ids = tokenizer(env.reference_completion(task), add_special_tokens=False)["input_ids"] + [
        tokenizer.eos_token_id
    ]
    return prompt_ids + answer_ids, [-100] * len(prompt_ids) + answer_ids


def reference_episodes(
    tokenizer: Any,
    env: MultiTurnEnv,
    rng: random.Random,
    count: int = EPISODE_TASKS,
    *,
    tool_fraction: float = 1.0,
) -> list[tuple[list[int], list[int]]]:
    """``count`` reference episodes of ``env``'s first split, encoded whole; the first
    ``round(count * tool_fraction)`` of the (randomly chosen) tasks are played with the tools, the
    others as a direct answer (so the share is exact, not left to chance).

    The whole context, as TRL's tool loop feeds it (prompt, the call, the tool's reply): the
    earlier warm start kept 64 tokens before each turn to save time, and the model it made, shown
    the ~450-token prompt it had never seen, wrote ``</tool_call>`` and no call (0 tool calls an
    episode in ``train --env gsm8k-python``)."""
    tasks = env.tasks(env.splits[0])
    chosen = rng.sample(range(len(tasks)), min(count, len(tasks)))
    calling = round(len(chosen) * tool_fraction)
    return [
        encode_episode(tokenizer, env, env.splits[0], index, direct=position >= calling)
        for position, index in enumerate(chosen)
    ]


def encode_episode(
    tokenizer: Any,
    env: MultiTurnEnv,
    split: str,
    index: int,
    *,
    context_tokens: int | None = None,
    direct: bool = False,
) -> tuple[list[int], list[int]]:
    """Token ids and labels of the reference episode on one task: the conversation as the chat
    template renders it with the tools (what the policy sees under TRL's tool loop and in eval),
    labels on the assistant turns only (prompt, tool replies and feedback are masked).
    ``context_tokens`` keeps only that many tokens of the context before each assistant turn.
    ``direct``: the episode is the env's reference answer as the first reply, with no tool call."""
    tools = env.tool_schemas()
    obs, info = env.reset(options={"index": index, "split": split})
    messages: list[dict[str, Any]] = list(obs)
    ids: list[int] = []
    labels: list[int] = []
    rendered = ""
    try:
        actions = (
            [{"role": "assistant", "content": env.reference_completion(info["task"])}]
            if direct
            else env.reference_episode(info["task"])
        )
    except NotImplementedError as exc:
        raise InvalidArgumentError(
            f"{env.id} has no reference {'answer' if direct else 'episode'} to warm-start on: {exc}"
        ) from exc
    for action in actions:
        prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        obs, _, terminated, truncated, _ = env.step(action)
        assistant = obs[len(messages)]
        whole = tokenizer.apply_chat_template([*messages, assistant], tools=tools, tokenize=False)
        if not (prompt.startswith(rendered) and whole.startswith(prompt)):
            raise RunFailedError(f"{env.id}: the chat template does not render a conversation prefix-stable")
        context = tokenizer(prompt[len(rendered) :], add_special_tokens=False)["input_ids"]
        if context_tokens is not None:
            context = context[-context_tokens:]
        reply = tokenizer(whole[len(prompt) :].rstrip("\n"), add_special_tokens=False)["input_ids"]
        ids += context + reply
        labels += [-100] * len(context) + reply
        rendered = prompt + whole[len(prompt) :].rstrip("\n")
        messages = list(obs)
        if terminated or truncated:
            break
    return ids, labels
