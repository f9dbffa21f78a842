"""Activation offload (``backends/engine/offload.py``): parameters saved for backward stay where
they are, large activations go through a host copy, small ones stay, and gradients are the ones
a run without offload gets. Runs on a CPU: there the host copy is a CPU-to-CPU copy, which is
enough to see which tensors took the offload path (a fresh buffer) and which did not."""

from __future__ import annotations

import pytest
import torch

from rlvr_gym.backends.engine.offload import ActivationOffload
from rlvr_gym.error import InvalidArgumentError


def test_a_saved_parameter_is_not_copied_and_a_large_activation_is():
    torch.manual_seed(0)
    layer = torch.nn.Linear(256, 256)
    x = torch.randn(64, 256, requires_grad=True)  # 64 KiB
    with ActivationOffload(min_bytes=4096, pin_memory=False) as offload:
        out = layer(x)
    node = out.grad_fn  # AddmmBackward0: saves the input (mat1) and weight.t() (mat2)
    assert node._saved_mat2.data_ptr() == layer.weight.data_ptr()
    assert node._saved_mat1.data_ptr() != x.data_ptr()
    torch.testing.assert_close(node._saved_mat1, x, rtol=0, atol=0)
    assert (offload.stats.parameters, offload.stats.offloaded) == (1, 1)
    assert offload.stats.offloaded_bytes == 64 * 256 * 4


def test_a_frozen_parameter_is_not_copied_either():
    layer = torch.nn.Linear(256, 256)
    layer.weight.requires_grad_(False)  # a LoRA base weight
    x = torch.randn(64, 256, requires_grad=True)
    with ActivationOffload(min_bytes=0, pin_memory=False) as offload:
        out = layer(x)
    assert out.grad_fn._saved_mat2.data_ptr() == layer.weight.data_ptr()
    assert offload.stats.parameters == 1


def test_small_tensors_stay_and_a_tensor_saved_twice_is_copied_once():
    x = torch.randn(8, requires_grad=True)
    big = torch.randn(4096, requires_grad=True) * 2  # 16 KiB, not a parameter
    with ActivationOffload(min_bytes=1024, pin_memory=False) as offload:
        small = x.sin()
        first, second = big.sin(), big.cos()  # both save ``big``
    assert small.grad_fn._saved_self.data_ptr() == x.data_ptr()
    assert first.grad_fn._saved_self.data_ptr() == second.grad_fn._saved_self.data_ptr() != big.data_ptr()
    assert (offload.stats.small, offload.stats.offloaded) == (1, 1)


@pytest.mark.parametrize("checkpointing", [False, True])
def test_a_decoder_trains_to_the_same_gradients_with_offload(checkpointing):
    from transformers import AutoModelForCausalLM, Qwen2Config

    config = Qwen2Config(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).train()
    if checkpointing:  # as TRL sets it: its own saved-tensor hooks nest inside ours
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ids = torch.randint(0, 128, (4, 32))

    def grads(offload):
        model.zero_grad()
        with offload:
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    from contextlib import nullcontext

    want_loss, want = grads(nullcontext())
    offload = ActivationOffload(min_bytes=16 * 1024, pin_memory=False)
    got_loss, got = grads(offload)
    assert torch.equal(got_loss, want_loss)
    for name, grad in want.items():
        assert torch.equal(got[name], grad), name
    linears = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    # each projection saved its weight, kept in place; with checkpointing the layers' saves are the
    # checkpoint's own, and what stays ours is outside them (the tied head's weight among them)
    assert offload.stats.parameters >= (1 if checkpointing else linears)
    assert offload.stats.offloaded > 0 and offload.stats.small > 0


def test_a_negative_threshold_is_refused():
    with pytest.raises(InvalidArgumentError, match="min_bytes"):
        ActivationOffload(min_bytes=-1)
