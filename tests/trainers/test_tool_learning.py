"""A tool env for the tiny model: ``big-add``, and the warm start on reference episodes as TRL's
tool loop renders them."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from rlvr_gym import envs

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")


@pytest.fixture(scope="module")
def big_add():
    env = envs.make("big-add")
    yield env
    env.close()


@pytest.fixture(scope="module")
def tool_tokenizer(big_add, tmp_path_factory):
    """The tiny model's tokenizer as training loads it from the model's folder (transformers
    reads it as Qwen2's, whose pre-tokenizer writes every digit as its own token)."""
    from transformers import AutoTokenizer

    from rlvr_gym.trainers.tiny_model import build_tiny_model

    return AutoTokenizer.from_pretrained(
        build_tiny_model(tmp_path_factory.mktemp("tiny"), big_add, tools=True)
    )


def test_the_reference_episode_is_one_add_call_then_its_result(big_add):
    obs, info = big_add.reset(options={"index": 3, "split": "train"})
    a, b = big_add.operands(info["task"])
    assert obs[-1]["content"] == f"Compute {a} + {b}." and 100 <= min(a, b) <= max(a, b) <= 999
    call, answer = big_add.reference_episode(info["task"])
    obs, reward, terminated, _, _ = big_add.step(call)
    assert not terminated and obs[-1] == {"role": "tool", "name": "add", "content": str(a + b)}
    _, reward, terminated, _, info = big_add.step(answer)
    assert terminated and reward == 1.0 and info["turns"][0]["tool_calls"] == [{"name": "add", "ok": True}]


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        ({"a": "12", "b": 3}, "a must be a JSON integer, got str"),
        ({"a": 1, "b": True}, "b must be a JSON integer, got bool"),
        ({"a": 10**150, "b": 1}, "a has more than 100 digits"),
        ({"a": 1}, "bad arguments for add"),
    ],
)
def test_a_bad_add_call_is_told_to_the_model_not_an_error_of_ours(big_add, arguments, told):
    big_add.reset(options={"index": 0, "split": "train"})
    obs, _, terminated, _, info = big_add.step(big_add.tool_call("add", **arguments))
    assert not terminated and told in obs[-1]["content"] and obs[-1]["content"].startswith("error:")
    assert info["turns"][0]["tool_calls"][0]["ok"] is False
    _, reward, terminated, _, info = big_add.step("<answer>0</answer>")
    assert terminated and reward == 0.0 and info["verdict"].reason.value != "error"


@pytest.mark.parametrize("digits", [1, 3, 6])
def test_every_sum_has_one_length_so_the_answer_is_copied_from_one_distance(digits):
    """The answer's digits sit at one distance from the tool's reply only if every sum has the
    same length: with 3- and 4-digit sums mixed, the tiny model never learnt to copy the result."""
    env = envs.make("big-add", digits=digits, train_size=300, test_size=300)
    try:
        for split in ("train", "test"):
            for task in env.tasks(split):
                a, b = env.operands(task)
                assert len(str(a)) == len(str(b)) == digits and task["answer"] == str(a + b)
                assert len(task["answer"]) == digits + 1, task
    finally:
        env.close()


def test_adding_in_the_head_is_scored_like_using_the_tool(big_add):
    """The answer is scored, not the tool use: a right answer without a call passes too."""
    _, info = big_add.reset(options={"index": 7, "split": "test"})
    _, reward, terminated, _, _ = big_add.step(big_add.reference_completion(info["task"]))
    assert terminated and reward == 1.0


def _trl_stream(tokenizer, env, index: int) -> list[int]:
    """The token ids TRL's tool loop (``GRPOTrainer._tool_call_loop``) builds for the reference
    episode: the prompt as ``apply_chat_template`` tokenizes it, each assistant message as the
    model would write it, and TRL's own tool-reply suffix after each call."""
    from trl import GRPOTrainer

    trainer = SimpleNamespace(  # the attributes _get_tool_suffix_ids reads
        processing_class=tokenizer,
        _tokenizer=tokenizer,
        _is_vlm=False,
        chat_template=None,
        chat_template_kwargs={},
    )
    tools = env.tool_schemas()
    obs, info = env.reset(options={"index": index, "split": "train"})
    ids = tokenizer.apply_chat_template(
        obs, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    messages = list(obs)
    for action in env.reference_episode(info["task"]):
        head = tokenizer.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, tokenize=False
        )
        obs, *_ = env.step(action)
        written = tokenizer.apply_chat_template([*messages, obs[len(messages)]], tools=tools, tokenize=False)
        ids += tokenizer(written[len(head) :].rstrip("\n"), add_special_tokens=False)["input_ids"]
        replies = [m for m in obs[len(messages) + 1 :] if m["role"] == "tool"]
        if replies:
            ids += GRPOTrainer._get_tool_suffix_ids(trainer, replies)
        messages = list(obs)
    return ids


def test_the_warm_start_trains_on_the_stream_trls_tool_loop_feeds_the_model(big_add, tool_tokenizer):
    """What the warm start teaches is what the model sees under GRPO: the whole prompt (tool
    schemas and all), the call, TRL's rendering of the tool reply, the answer. Labels are the
    assistant's tokens only."""
    from rlvr_gym.trainers.warm_start import reference_episodes

    rng = random.Random(0)
    indices = random.Random(0).sample(range(len(big_add.tasks("train"))), 3)
    episodes = reference_episodes(tool_tokenizer, big_add, rng, count=3)
    for index, (ids, labels) in zip(indices, episodes, strict=True):
        assert ids == _trl_stream(tool_tokenizer, big_add, index)
        taught = tool_tokenizer.decode([t for t in labels if t != -100])
        _, info = big_add.reset(options={"index": index, "split": "train"})
        a, b = big_add.operands(info["task"])
        assert taught == (
            f'<tool_call>\n{{"name": "add", "arguments": {{"a": {a}, "b": {b}}}}}\n</tool_call><|im_end|>'
            f"<answer>{a + b}</answer><|im_end|>"
        )


def test_the_tool_tokenizer_writes_a_number_the_same_in_the_question_and_the_call(big_add, tool_tokenizer):
    """The model copies tokens: a number must be the same tokens in the question and in the call's
    JSON (an expression string would start its first number without the space)."""
    obs, info = big_add.reset(options={"index": 11, "split": "train"})
    a, b = big_add.operands(info["task"])
    call = tool_tokenizer.apply_chat_template(
        [*obs, big_add.reference_episode(info["task"])[0]], tools=big_add.tool_schemas(), tokenize=False
    )
    question = tool_tokenizer(obs[-1]["content"], add_special_tokens=False)["input_ids"]
    written = tool_tokenizer(call.rsplit("<tool_call>", 1)[1], add_special_tokens=False)["input_ids"]
    for number in (a, b):
        tokens = tool_tokenizer(f" {number}", add_special_tokens=False)["input_ids"]
        assert _contains(question, tokens) and _contains(written, tokens)


def _contains(ids: list[int], part: list[int]) -> bool:
    return any(ids[i : i + len(part)] == part for i in range(len(ids) - len(part) + 1))


def test_a_tool_fraction_warm_start_mixes_called_and_direct_episodes(big_add, tool_tokenizer):
    """``tool_fraction`` 0.5: half the episodes are the tool call then the answer, half the answer
    straight away (no call), on the same prompt TRL's loop feeds the model — so the warm-started
    policy calls in about half its episodes, and GRPO has the call to select."""
    from rlvr_gym.trainers.warm_start import reference_episodes

    indices = random.Random(0).sample(range(len(big_add.tasks("train"))), 4)
    episodes = reference_episodes(tool_tokenizer, big_add, random.Random(0), count=4, tool_fraction=0.5)
    for position, (index, (ids, labels)) in enumerate(zip(indices, episodes, strict=True)):
        obs, info = big_add.reset(options={"index": index, "split": "train"})
        a, b = big_add.operands(info["task"])
        taught = tool_tokenizer.decode([t for t in labels if t != -100])
        prompt = tool_tokenizer.apply_chat_template(
            obs, tools=big_add.tool_schemas(), add_generation_prompt=True, tokenize=True, return_dict=False
        )
        assert ids[: len(prompt)] == prompt
        if position < 2:
            assert taught.startswith("<tool_call>") and taught.endswith(f"<answer>{a + b}</answer><|im_end|>")
        else:
            assert taught == f"<answer>{a + b}</answer><|im_end|>"
            assert ids == prompt + labels[len(prompt) :]


@pytest.mark.parametrize("fraction", [-0.1, 1.5, float("nan"), True])
def test_a_tool_fraction_outside_zero_to_one_is_refused(fraction):
    from rlvr_gym.backends.config import RunConfig
    from rlvr_gym.error import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="warm_start_tool_fraction must lie in"):
        RunConfig(warm_start_tool_fraction=fraction)


def test_the_warm_start_runs_the_shared_prompt_once_with_the_same_loss_and_gradients(big_add, tool_tokenizer):
    """A tool env's episodes share their first ~250 tokens (system prompt, tool schemas): the warm
    start runs them once a batch, not once a row — the same loss and gradients as the whole batch,
    a third of the time."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from rlvr_gym.trainers.warm_start import _batch_loss, _shared_context, reference_episodes

    rows = reference_episodes(tool_tokenizer, big_add, random.Random(0), count=4, tool_fraction=0.5)
    shared = _shared_context(rows)
    assert shared > 100
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(tool_tokenizer.name_or_path))
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.tensor([ids + [0] * (width - len(ids)) for ids, _ in rows])
    labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows])
    whole = model(input_ids=input_ids, labels=labels).loss  # the model's own loss over every row
    whole.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    loss = _batch_loss(model, rows, 0, head_on_labels=True)
    loss.backward()
    assert loss.item() == pytest.approx(whole.item(), rel=1e-5)
    for grad, want in zip((p.grad for p in model.parameters()), expected, strict=True):
        torch.testing.assert_close(grad, want, rtol=1e-4, atol=1e-6)
