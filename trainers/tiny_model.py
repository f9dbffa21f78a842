"""Build a tiny causal LM and a byte-level BPE tokenizer with a chat template, fully offline.

For tests, demos and CPU runs where no hub is reachable. The tokenizer is trained on the env's
own prompts and reference answers, so a 2-layer model can learn the task in minutes. Any
Hugging Face model path or hub id can be used in its place.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from rlvr_gym.envs import Env
from rlvr_gym.error import InvalidArgumentError

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>\n",
    "fields": {"content": {"close_pattern": r"\s*<\|end\|>", "content": "text"}},
}
"""How a server splits :data:`CHAT_TEMPLATE`'s assistant turn out of what the model wrote
(transformers' ``tokenizer.response_template``, written by :func:`make_servable`). Without it,
``transformers serve`` parses the tiny model's replies with Qwen2's ChatML template (its fallback
for the architecture), finds no ``<|im_start|>assistant`` and hands back the rendered prompt as
the "completion"."""
ANSWER_TAGS = ("<answer>", "</answer>")
"""Whole-tag tokens (ordinary, decoded text): generation stops right after ``</answer>`` when the
env's reference answers use the tag, so no reward or gradient goes to tokens after the answer."""


TOOL_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOOL_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
"""Tool-call mode (``tools=True``): Qwen2.5's chat template, which TRL knows how to parse tool
calls from (``<tool_call>{json}</tool_call>``), with its tags as whole, decoded tokens."""


def tool_chat_template() -> str:
    """Qwen2.5's chat template as TRL ships it: it renders tool schemas, ``tool_calls`` and
    ``tool`` messages, and TRL's ``add_response_schema`` recognises it for parsing."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


TOOL_VOCAB_SIZE = 2048
"""A tool env's tokenizer is bigger: with 512 tokens a tool name and the call's JSON keys are
split into pieces the 2-layer model repeats (``run_prun_python``); with 2048 they are a few
whole tokens and a short warm start writes valid calls."""

PREAMBLE_WEIGHT = 200
"""Copies of a tool env's rendered system block (prompt, tool schemas, the template's tool
instructions) in the tokenizer's corpus: enough that BPE merges it into few tokens, since every
prompt repeats it (about half the length of a gsm8k-python prompt otherwise)."""


def tool_preamble(env: Env) -> str:
    """The system block a tool env's prompts start with, rendered by the tool chat template."""
    from jinja2 import Template

    messages = [{"role": "system", "content": env.system_prompt or ""}]
    tools = getattr(env, "tool_schemas", list)()  # a single-step env served behind tools has none
    return Template(tool_chat_template()).render(messages=messages, tools=tools, add_generation_prompt=False)


def env_corpus(env: Env, tasks: int = 2000) -> Iterator[str]:
    """Questions, system prompt and reference answers of ``env`` (the tokenizer's training text)."""
    if env.system_prompt:
        yield env.system_prompt
    for task in itertools.islice(env.tasks(env.splits[0]), tasks):
        yield env.question(task)
        try:
            reference = env.reference_completion(task)
        except NotImplementedError:
            continue
        yield reference


def build_tokenizer(
    texts: Iterable[str], vocab_size: int = 512, extra_tokens: Iterable[str] = (), *, tools: bool = False
):
    """A byte-level BPE ``PreTrainedTokenizerFast`` with pad/eos tokens, a chat template and
    ``extra_tokens`` as whole (non-special, so decoded) tokens. ``tools=True``: Qwen2.5's
    special tokens and tool-calling template (see :data:`TOOL_TAGS`)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=TOOL_SPECIAL_TOKENS if tools else SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    extra = [*extra_tokens, *(TOOL_TAGS if tools else ())]
    core.add_tokens([AddedToken(token, special=False, normalized=False) for token in extra])
    pad, eos = ("<|endoftext|>", "<|im_end|>") if tools else ("<|pad|>", "<|end|>")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=pad, eos_token=eos, bos_token=None, unk_token=None
    )
    tokenizer.chat_template = tool_chat_template() if tools else CHAT_TEMPLATE
    return tokenizer


def env_tokenizer(env: Env, *, vocab_size: int = 512, tools: bool = False):
    """The tiny model's tokenizer for ``env`` (trained on its text) and the answer tags made
    whole tokens (none when the env's answers do not use them)."""
    corpus = list(env_corpus(env))
    tags = ANSWER_TAGS if any(ANSWER_TAGS[1] in text for text in corpus[1:]) else ()
    if tools:
        corpus += [json.dumps(schema) for schema in getattr(env, "tool_schemas", list)()]
        corpus += [tool_preamble(env)] * PREAMBLE_WEIGHT
    return build_tokenizer(corpus, vocab_size=vocab_size, extra_tokens=tags, tools=tools), tags


def make_servable(model_dir: str | Path) -> Path:
    """Give a tiny model's saved tokenizer the :data:`RESPONSE_TEMPLATE` a server needs to cut the
    reply out of what the model wrote; a model with the tool template (ChatML) or with a template
    of its own is left as it is. Not set while training: TRL parses completions with a tokenizer's
    response template when it has one, which changes what GRPO scores (0.49 -> 0.40 on the demo)."""
    from transformers import AutoTokenizer

    path = Path(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if tokenizer.chat_template == CHAT_TEMPLATE and getattr(tokenizer, "response_template", None) is None:
        tokenizer.response_template = RESPONSE_TEMPLATE
        tokenizer.save_pretrained(str(path))
    return path


def build_tiny_model(
    out_dir: str | Path,
    env: Env,
    *,
    vocab_size: int | None = None,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    seed: int = 0,
    tools: bool = False,
) -> Path:
    """Write a tiny Qwen2-architecture model, its tokenizer trained on ``env``'s text, to ``out_dir``.

    ``tools=True`` gives the tokenizer a chat template that can express tool calls (for
    ``environment_factory`` training) and trains it on the env's tool schemas too.
    ``vocab_size`` defaults to 512, or :data:`TOOL_VOCAB_SIZE` with ``tools``.
    """
    if vocab_size is None:
        vocab_size = TOOL_VOCAB_SIZE if tools else 512
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    if hidden_size % num_heads:
        raise InvalidArgumentError(f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads})")
    out = Path(out_dir)
    tokenizer, tags = env_tokenizer(env, vocab_size=vocab_size, tools=tools)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 4,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=max(1, num_heads // 2),
        max_position_embeddings=4096 if tools else 1024,  # tool schemas make long prompts
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    stop_ids = [tokenizer.convert_tokens_to_ids(ANSWER_TAGS[1])] if tags else []
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, *stop_ids]
    # A server samples only where the model's generation config says so (transformers serve
    # reads temperature from the request but not do_sample): else every sample is the greedy one.
    model.generation_config.do_sample = True
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
