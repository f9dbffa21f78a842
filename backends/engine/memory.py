"""Memory path of the ``trl`` backend: bounded-tile log-probs and activation offload.

TRL 1.16 already scores tokens through a fused LM head (``add_fused_lm_head``), but with tiles
of 4,096 tokens × 32,768 vocabulary entries, folded in fp32 with several same-sized temporaries,
and — on devices without Triton (CPU) — for *every* position, prompt included. Those tiles are
the peak of a step whenever the vocabulary is large (151,936 for Qwen2.5/Qwen3). This module
runs the same TRL kernel (``ChunkedLogProbFunction``: online log-sum-exp, recomputing backward)
on the completion positions only, in small tiles, for the policy, old-policy and reference
passes alike. With ``offload_activations`` the large activations saved for backward are kept in
CPU memory, parameters never (``offload.py``); that only runs on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rlvr_gym.backends.engine.forward import run_as_forward
from rlvr_gym.backends.engine.head import head_weight_and_bias
from rlvr_gym.error import InvalidArgumentError

DEFAULT_TOKEN_CHUNK = 1024
DEFAULT_VOCAB_CHUNK = 8192


def chunked_completion_logps(
    hidden: Any,
    weight: Any,
    bias: Any,
    targets: Any,
    *,
    temperature: float = 1.0,
    token_chunk: int = DEFAULT_TOKEN_CHUNK,
    vocab_chunk: int = DEFAULT_VOCAB_CHUNK,
    entropy: bool = False,
) -> tuple[Any, Any]:
    """Log-probs (and entropies) of ``targets`` under ``hidden @ weight.T + bias``, ``/ temperature``.

    ``hidden`` is ``[B, T, H]`` (the states that predict ``targets`` ``[B, T]``). The
    ``[B·T, V]`` logits are never built: at most ``token_chunk × vocab_chunk`` of them exist at a
    time, in forward and in backward. Returns ``([B, T], [B, T] | None)``.
    """
    from trl.kernels import ChunkedLogProbFunction

    if token_chunk < 1 or vocab_chunk < 1:
        raise InvalidArgumentError(f"token_chunk and vocab_chunk must be >= 1, got {token_chunk}, {vocab_chunk}")
    if hidden.shape[:2] != targets.shape:
        raise InvalidArgumentError(f"hidden {tuple(hidden.shape)} does not match targets {tuple(targets.shape)}")
    import torch

    outputs = ("log_probs", "entropy") if entropy else ("log_probs",)
    flat = hidden.reshape(-1, hidden.size(-1))
    flat_targets = targets.reshape(-1)
    logps, entropies = [], []
    for start in range(0, flat.size(0), token_chunk):
        end = start + token_chunk
        logp, ent, *_ = ChunkedLogProbFunction.apply(
            flat[start:end],
            weight,
            bias,
            flat_targets[start:end],
            temperature,
            vocab_chunk,
            None,
            1.0,
            outputs,
        )
        logps.append(logp)
        entropies.append(ent)
    shape = targets.shape
    return (
        torch.cat(logps).view(shape),
        torch.cat(entropies).view(shape) if entropy else None,
    )


def completion_hidden_states(model: Any, input_ids: Any, attention_mask: Any, keep: int) -> Any:
    """Final-layer hidden states that predict the last ``keep`` tokens (no LM head, no KV cache)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = base.get_decoder() if hasattr(base, "get_decoder") else base.model
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    return hidden[:, :-1, :][:, -keep:, :]


def model_completion_logps(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    keep: int,
    *,
    temperature: float = 1.0,
    token_chunk: int = DEFAULT_TOKEN_CHUNK,
    vocab_chunk: int = DEFAULT_VOCAB_CHUNK,
    entropy: bool = False,
    autocast: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> tuple[Any, Any]:
    """Log-probs (and entropies) of the last ``keep`` tokens of ``input_ids`` under ``model``.

    Runs as ``model``'s forward (``forward.py``: a sharding wrapper's hooks fire); the decoder runs
    under ``autocast``; the LM head's weight is read directly (gathered first when FSDP2 left it
    sharded, ``head.py``) and applied tile by tile.
    """

    def score(ids: Any, mask: Any) -> tuple[Any, Any]:
        with autocast():
            hidden = completion_hidden_states(model, ids, mask, keep)
        weight, bias = head_weight_and_bias(model)
        return chunked_completion_logps(
            hidden,
            weight,
            bias,
            ids[:, -keep:],
            temperature=temperature,
            token_chunk=token_chunk,
            vocab_chunk=vocab_chunk,
            entropy=entropy,
        )

    return run_as_forward(model, score, input_ids, attention_mask)


def _plain_text_call(kwargs: dict[str, Any]) -> bool:
    """Only text inputs: vision and token-type inputs take TRL's own path."""
    return all(value is None for value in kwargs.values())


def _scaled_logits(model: Any) -> bool:
    """Models whose logits are scaled or soft-capped take TRL's own path (it handles them)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    text = base.config.get_text_config()
    names = (
        "final_logit_softcapping",
        "logit_scale",
        "output_multiplier",
        "lm_head_multiplier",
        "logits_scaling",
    )
    return any(getattr(text, name, None) is not None for name in names)


def memory_trainer_class(
    base: type,
    *,
    chunked_logps: bool = True,
    offload_activations: bool = True,
    token_chunk: int = DEFAULT_TOKEN_CHUNK,
    vocab_chunk: int = DEFAULT_VOCAB_CHUNK,
) -> type:
    """``base`` (a ``GRPOTrainer`` class) with the memory pieces switched on as asked."""
    import torch

    from rlvr_gym.backends.engine.offload import ActivationOffload

    class MemoryGRPOTrainer(base):
        def _get_per_token_logps_and_entropies(
            self,
            model,
            input_ids,
            attention_mask,
            logits_to_keep,
            batch_size=None,
            compute_entropy=False,
            compute_aux_loss=False,
            **extra,
        ):
            unwrapped = self.accelerator.unwrap_model(model)
            if (
                not chunked_logps
                or compute_aux_loss
                or self.args.cast_lm_head_to_fp32
                or not _plain_text_call(extra)
                or _scaled_logits(unwrapped)
            ):
                return super()._get_per_token_logps_and_entropies(
                    model,
                    input_ids,
                    attention_mask,
                    logits_to_keep,
                    batch_size=batch_size,
                    compute_entropy=compute_entropy,
                    compute_aux_loss=compute_aux_loss,
                    **extra,
                )
            batch_size = batch_size or input_ids.size(0)
            logps, entropies = [], []
            for start in range(0, input_ids.size(0), batch_size):
                logp, ent = model_completion_logps(
                    unwrapped,
                    input_ids[start : start + batch_size],
                    attention_mask[start : start + batch_size],
                    logits_to_keep,
                    temperature=self.temperature,
                    token_chunk=token_chunk,
                    vocab_chunk=vocab_chunk,
                    entropy=compute_entropy,
                    autocast=self.accelerator.autocast,
                )
                logps.append(logp)
                entropies.append(ent)
            return (
                torch.cat(logps),
                torch.cat(entropies) if compute_entropy else None,
                None,
            )

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            offload = offload_activations and model.training and torch.cuda.is_available()
            with ActivationOffload() if offload else nullcontext():
                return super().compute_loss(
                    model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
                )

    MemoryGRPOTrainer.__name__ = f"Memory{base.__name__}"
    return MemoryGRPOTrainer
