"""A GRPO memory plan per backend, from a model's config values alone (no weights loaded).

Why: the backend choice (``backends.auto``) must know before anything is loaded whether a full
fine-tune fits one GPU, whether ZeRO-2's CPU offload is needed, and what vLLM's KV cache costs.
The figures are the standard accounting, each term stated so a reader can check it by hand:

* weights: parameters × bytes of the compute dtype (bf16 on a GPU, fp32 on CPU);
* gradients: trainable parameters × the same bytes;
* optimizer: AdamW's two moments in fp32 (8 B/param) plus an fp32 master copy when the weights
  are bf16 (4 B/param) — the "16 bytes per parameter" of the ZeRO paper with weights and grads;
* logits of a micro-batch: sequences × completion tokens × vocab × 4 B (fp32), the term Liger's
  chunked loss removes;
* activations saved for backward per token and layer (SDPA/flash attention, no s² term):
  layer inputs and norm outputs (4·h), q/k/v and attention output (2·nh·hd + 2·nkv·hd) and the
  SwiGLU MLP (gate, up, silu, product: 4·i), in the compute dtype; with gradient checkpointing
  only each layer's input (h) is kept, plus one layer's full activations during its recompute;
* vLLM KV cache: 2 (k, v) × layers × kv heads × head dim × 2 B (bf16) per token, for every
  sequence of one generation batch at its full length.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_gym.error import InvalidArgumentError

GIB = 1024**3

# ZeRO-2 with CPU offload keeps on the GPU only the bf16 weights, a bf16 gradient partition and
# the communication buckets; the fp32 master, moments and fp32 gradients live in CPU RAM.
CPU_FP32_GRAD_BYTES = 4


@dataclass(frozen=True)
class ModelShape:
    """The config values a memory plan needs (names as in Hugging Face ``config.json``)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModelShape:
        """Read a ``config.json`` dict (decoder-only Llama/Qwen2/Qwen3 style); missing keys fail."""
        config = dict(config.get("text_config") or config)
        required = (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
        )
        missing = [k for k in required if k not in config]
        if missing:
            raise InvalidArgumentError(
                f"model config lacks {missing}: a memory plan needs a decoder-only LM config"
            )
        heads = int(config["num_attention_heads"])
        model_type = str(config.get("model_type", ""))
        return cls(
            vocab_size=int(config["vocab_size"]),
            hidden_size=int(config["hidden_size"]),
            intermediate_size=int(config["intermediate_size"]),
            num_hidden_layers=int(config["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or config["hidden_size"] // heads),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            # Qwen2 puts a bias on q/k/v; Qwen3 drops it and RMS-normalizes q and k per head.
            attention_bias=bool(config.get("attention_bias", model_type == "qwen2")),
            qk_norm=model_type.startswith("qwen3"),
        )

    @property
    def params_per_layer(self) -> int:
        h, hd = self.hidden_size, self.head_dim
        q, kv = self.num_attention_heads * hd, self.num_key_value_heads * hd
        attention = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            attention += q + 2 * kv
        if self.qk_norm:
            attention += 2 * hd
        return attention + 3 * h * self.intermediate_size + 2 * h

    @property
    def num_params(self) -> int:
        embed = self.vocab_size * self.hidden_size
        head = 0 if self.tie_word_embeddings else embed
        return embed + head + self.num_hidden_layers * self.params_per_layer + self.hidden_size

    def lora_params(self, r: int, targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")) -> int:
        """LoRA adapter parameters: r × (in + out) for each targeted projection of every layer."""
        h, hd = self.hidden_size, self.head_dim
        q, kv, i = self.num_attention_heads * hd, self.num_key_value_heads * hd, self.intermediate_size
        shapes = {
            "q_proj": (h, q),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (q, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }
        unknown = [t for t in targets if t not in shapes]
        if unknown:
            raise InvalidArgumentError(f"unknown LoRA target modules {unknown}; known: {sorted(shapes)}")
        return self.num_hidden_layers * sum(r * (shapes[t][0] + shapes[t][1]) for t in targets)

    def activation_bytes_per_token_layer(self, dtype_bytes: int) -> int:
        h, hd = self.hidden_size, self.head_dim
        saved = 4 * h + 2 * self.num_attention_heads * hd + 2 * self.num_key_value_heads * hd
        return dtype_bytes * (saved + 4 * self.intermediate_size)

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * dtype_bytes


def load_shape(model: str | Path | Mapping[str, Any]) -> ModelShape:
    """A model's shape from a config dict, a local model folder, a ``config.json`` or a hub id.

    Hub ids are resolved through ``transformers.AutoConfig`` (its cache works offline).
    """
    if isinstance(model, Mapping):
        return ModelShape.from_config(model)
    path = Path(model)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        return ModelShape.from_config(json.loads(path.read_text()))
    if path.suffix == ".json" or path.is_absolute() or str(model).startswith("."):
        raise InvalidArgumentError(f"cannot read the config of model {str(model)!r}: no such file or model folder")
    from rlvr_gym.envs.data import hub_offline, hub_unreachable

    unreachable = None if hub_offline() else hub_unreachable()
    if unreachable is not None:  # else the hub client retries for about a minute first
        raise InvalidArgumentError(
            f"cannot read the config of model {str(model)!r}: no such local folder, and the Hugging Face hub "
            f"is unreachable ({unreachable}); pass a local model folder or its config.json "
            "(or set HF_HUB_OFFLINE=1 to use a cached copy)"
        )
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(model))
    except Exception as exc:
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise InvalidArgumentError(
            f"cannot read the config of model {str(model)!r} (no local folder, and the hub/cache gave: "
            f"{type(exc).__name__}: {first_line}); pass a local model folder or a config.json"
        ) from exc
    return ModelShape.from_config(config.to_dict())


@dataclass(frozen=True)
class Workload:
    """The batch shapes of a GRPO step that memory depends on."""

    micro_batch: int = 1  # sequences per forward/backward on one device
    prompt_length: int = 256
    completion_length: int = 256
    generation_batch: int = 16  # sequences generated at once (prompts × group size)
    lora_r: int | None = None
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    reference_model: bool = False  # KL beta > 0 keeps a frozen copy for the reference log-probs

    @property
    def sequence_length(self) -> int:
        return self.prompt_length + self.completion_length


@dataclass
class BackendPlan:
    """Bytes per device for one backend; ``gpu`` is per GPU, ``cpu`` is host RAM per machine."""

    backend: str
    devices: int
    gpu: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, int] = field(default_factory=dict)
    note: str = ""

    @property
    def gpu_total(self) -> int:
        return sum(self.gpu.values())

    @property
    def cpu_total(self) -> int:
        return sum(self.cpu.values())


@dataclass
class MemoryPlan:
    """Model-level terms (whole model, one device's micro-batch) and the per-backend plans."""

    shape: ModelShape
    workload: Workload
    params: int
    trainable: int
    terms: dict[str, int]
    backends: dict[str, BackendPlan]


def plan(shape: ModelShape, workload: Workload, *, num_gpus: int = 1, dtype_bytes: int = 2) -> MemoryPlan:
    """Memory per backend for ``workload`` on ``num_gpus`` GPUs (bf16 unless ``dtype_bytes=4``)."""
    if num_gpus < 0 or dtype_bytes not in (2, 4):
        raise InvalidArgumentError(f"num_gpus must be >= 0 and dtype_bytes 2 or 4, got {num_gpus}, {dtype_bytes}")
    params = shape.num_params
    trainable = shape.lora_params(workload.lora_r, workload.lora_targets) if workload.lora_r else params
    master = 4 if dtype_bytes == 2 else 0
    tokens = workload.micro_batch * workload.sequence_length
    layer_act = shape.activation_bytes_per_token_layer(dtype_bytes)
    terms = {
        "weights": params * dtype_bytes + (trainable * dtype_bytes if workload.lora_r else 0),
        "reference_model": params * dtype_bytes if workload.reference_model else 0,
        "gradients": trainable * dtype_bytes,
        "optimizer": trainable * (8 + master),
        "logits": workload.micro_batch * workload.completion_length * shape.vocab_size * 4,
        "activations": tokens * shape.num_hidden_layers * layer_act,
        "activations_checkpointed": tokens
        * (shape.num_hidden_layers * shape.hidden_size * dtype_bytes + layer_act),
        "kv_cache": workload.generation_batch * workload.sequence_length * shape.kv_bytes_per_token(),
    }
    # Every backend below trains with gradient checkpointing; the plain figure is reported too.
    shared = {
        "weights": terms["weights"],
        "reference_model": terms["reference_model"],
        "logits": terms["logits"],
        "activations": terms["activations_checkpointed"],
    }
    n = max(num_gpus, 1)
    plans = {
        "trl": BackendPlan(
            "trl",
            1,
            gpu={**shared, "gradients": terms["gradients"], "optimizer": terms["optimizer"]},
            note="one device holds everything; generation with transformers (no KV cache term: it is small and transient)",
        ),
        "deepspeed-zero2": BackendPlan(
            "deepspeed-zero2",
            n,
            gpu={**shared, "gradients": terms["gradients"] // n},
            # One machine's RAM holds the offloaded partitions of all its ranks: the whole set.
            cpu={"optimizer": terms["optimizer"], "gradients_fp32": trainable * CPU_FP32_GRAD_BYTES},
            note="ZeRO-2: gradients partitioned over GPUs; optimizer states and fp32 grads offloaded to CPU",
        ),
        "fsdp-vllm": BackendPlan(
            "fsdp-vllm",
            n,
            gpu={
                "weights": terms["weights"] // n + shape.params_per_layer * dtype_bytes,
                "reference_model": terms["reference_model"] // n,
                "gradients": terms["gradients"] // n,
                "optimizer": terms["optimizer"] // n,
                "logits": terms["logits"],
                "activations": terms["activations_checkpointed"],
            },
            note="FSDP2 shards weights, grads and optimizer over the training GPUs (+1 layer gathered); "
            "vLLM (server mode) needs its own GPU for weights + KV cache",
        ),
    }
    plans["vllm-server"] = BackendPlan(
        "vllm-server",
        1,
        gpu={"weights": params * 2, "kv_cache": terms["kv_cache"]},
        note="the generation server of fsdp-vllm (bf16 weights + KV cache of one generation batch)",
    )
    return MemoryPlan(shape, workload, params, trainable, terms, plans)


def gib(n: int) -> str:
    return f"{n / GIB:.2f}"
