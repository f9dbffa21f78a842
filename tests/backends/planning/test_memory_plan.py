"""The memory plan against figures computed by hand from published configs, and the backend choice."""

from __future__ import annotations

import pytest

from rlvr_gym.backends.planning.choice import NoBackendFitsError, choose, render
from rlvr_gym.backends.planning.hardware import GIB, Hardware
from rlvr_gym.backends.planning.memory_plan import ModelShape, Workload, load_shape, plan

# Published config.json values (huggingface.co/Qwen/Qwen2.5-1.5B-Instruct, Qwen/Qwen3-0.6B).
QWEN25_15B = {
    "model_type": "qwen2",
    "vocab_size": 151936,
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_hidden_layers": 28,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
}
QWEN3_06B = {
    "model_type": "qwen3",
    "vocab_size": 151936,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "tie_word_embeddings": True,
    "attention_bias": False,
}

# micro-batch 1 × (256 prompt + 256 completion) tokens; vLLM generates 16 sequences at once.
WORKLOAD = Workload(micro_batch=1, prompt_length=256, completion_length=256, generation_batch=16)

# Hand computation, bf16 weights/grads (2 B), AdamW fp32 moments + fp32 master (12 B/param).
HAND = {
    "qwen2.5-1.5b": {
        # embed 151936*1536 = 233,373,696 (tied head); per layer: q 1536*1536 + k,v 2*1536*256
        # + o 1536*1536 + qkv bias 1536+2*256 + MLP 3*1536*8960 + 2 norms 2*1536 = 46,797,824;
        # 28 layers = 1,310,339,072; + final norm 1536. Published: 1.54B.
        "params": 1_543_714_304,
        "weights": 2 * 1_543_714_304,
        "gradients": 2 * 1_543_714_304,
        "optimizer": 12 * 1_543_714_304,  # 18.52 GB
        # 1 sequence × 256 completion tokens × 151,936 vocab × 4 B
        "logits": 155_582_464,
        # per token per layer: 2 B × (4*1536 + 2*12*128 + 2*2*128 + 4*8960) = 91,136 B; × 512 × 28
        "activations": 1_306_525_696,
        # 512 tokens × (28 layers × 1536 × 2 B + one layer recomputed 91,136 B)
        "activations_checkpointed": 90_701_824,
        # per token 2 × 28 layers × 2 kv heads × 128 × 2 B = 28,672 B; × 16 seqs × 512 tokens
        "kv_cache": 234_881_024,
        # LoRA r=16 on q,k,v,o: 16 × (3072 + 1792 + 1792 + 3072) × 28 (PEFT prints 4,358,144)
        "lora16": 4_358_144,
    },
    "qwen3-0.6b": {
        # embed 151936*1024 = 155,582,464 (tied); per layer: q 1024*2048 + k,v 2*1024*1024 + o 2048*1024
        # + q/k norms 2*128 + MLP 3*1024*3072 + 2 norms = 15,730,944; × 28 = 440,466,432; + 1024.
        # Published: 0.6B, 0.44B non-embedding.
        "params": 596_049_920,
        "weights": 2 * 596_049_920,
        "gradients": 2 * 596_049_920,
        "optimizer": 12 * 596_049_920,
        "logits": 155_582_464,
        # 2 B × (4*1024 + 2*16*128 + 2*8*128 + 4*3072) = 45,056 B; × 512 × 28
        "activations": 645_922_816,
        # 512 × (28 × 1024 × 2 + 45,056)
        "activations_checkpointed": 52_428_800,
        # 2 × 28 × 8 × 128 × 2 B = 114,688 B per token; × 16 × 512
        "kv_cache": 939_524_096,
        # 16 × ((1024+2048) + 2*(1024+1024) + (2048+1024)) × 28
        "lora16": 4_587_520,
    },
}


@pytest.mark.parametrize(("name", "config"), [("qwen2.5-1.5b", QWEN25_15B), ("qwen3-0.6b", QWEN3_06B)])
def test_plan_matches_hand_computed_figures_within_ten_percent(name, config):
    hand = HAND[name]
    shape = ModelShape.from_config(config)
    memory = plan(shape, WORKLOAD, num_gpus=1)
    assert memory.params == pytest.approx(hand["params"], rel=0.1)
    for term in (
        "weights",
        "gradients",
        "optimizer",
        "logits",
        "activations",
        "activations_checkpointed",
        "kv_cache",
    ):
        assert memory.terms[term] == pytest.approx(hand[term], rel=0.1), term
    assert shape.lora_params(16) == pytest.approx(hand["lora16"], rel=0.1)
    trl = memory.backends["trl"].gpu
    assert sum(trl.values()) == pytest.approx(
        hand["weights"]
        + hand["gradients"]
        + hand["optimizer"]
        + hand["logits"]
        + hand["activations_checkpointed"],
        rel=0.1,
    )
    zero2 = memory.backends["deepspeed-zero2"]
    assert "optimizer" not in zero2.gpu and zero2.cpu["optimizer"] == pytest.approx(
        hand["optimizer"], rel=0.1
    )


def test_the_counts_are_exact_for_these_configs():
    """The formulas are exact parameter counts, not estimates (a regression guard finer than 10%)."""
    assert ModelShape.from_config(QWEN25_15B).num_params == HAND["qwen2.5-1.5b"]["params"]
    assert ModelShape.from_config(QWEN3_06B).num_params == HAND["qwen3-0.6b"]["params"]


def test_lora_trains_only_the_adapter():
    memory = plan(ModelShape.from_config(QWEN25_15B), Workload(lora_r=16), num_gpus=1)
    assert memory.trainable == HAND["qwen2.5-1.5b"]["lora16"]
    assert memory.terms["optimizer"] == 12 * memory.trainable


def test_shape_from_a_model_folder_and_a_clear_error_for_a_non_lm(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps(QWEN3_06B))
    assert load_shape(tmp_path) == ModelShape.from_config(QWEN3_06B)
    with pytest.raises(ValueError, match="intermediate_size"):
        ModelShape.from_config({"vocab_size": 10, "hidden_size": 4})


def gpus(n: int, gib: float, vllm: bool = False) -> Hardware:
    return Hardware(gpus=n, gpu_memory_bytes=int(gib * GIB), cpu_memory_bytes=128 * GIB, bf16=True, vllm=vllm)


def test_choice_follows_the_hardware():
    shape = ModelShape.from_config(QWEN25_15B)
    assert choose(shape, Hardware(cpu_memory_bytes=24 * GIB)).backend == "trl"
    # A full fine-tune of 1.5B needs ~25 GB (16 B/param): more than 90% of a 24 GiB card.
    one_small = choose(shape, gpus(1, 24), WORKLOAD)
    assert one_small.backend == "deepspeed-zero2", render(one_small)
    assert choose(shape, gpus(1, 24), Workload(lora_r=16)).backend == "trl"
    assert choose(shape, gpus(1, 80), WORKLOAD).backend == "trl"
    assert choose(shape, gpus(4, 80, vllm=True), WORKLOAD).backend == "fsdp-vllm"
    assert choose(shape, gpus(4, 80, vllm=False), WORKLOAD).backend == "trl"
    with pytest.raises(NoBackendFitsError, match="LoRA"):
        choose(shape, gpus(1, 4), WORKLOAD)


def test_auto_on_this_cpu_machine_is_trl_without_reading_the_model():
    from rlvr_gym import backends

    assert backends.auto("no/such-model", Hardware(cpu_memory_bytes=GIB)) == "trl"
    assert backends.auto(QWEN3_06B, gpus(2, 80, vllm=True)) == "fsdp-vllm"


def test_render_is_one_table_with_the_choice(capsys):
    from rlvr_gym.trainers.cli import main

    choice = choose(ModelShape.from_config(QWEN25_15B), gpus(1, 24), WORKLOAD)
    text = render(choice)
    assert "optimizer" in text and "deepspeed-zero2 cpu" in text and text.endswith(choice.reason)
    assert main(["plan", "--model", "qwen25.json", "--env", "arith"]) == 2  # no such file: one-line error
    assert "cannot read the config" in capsys.readouterr().err


@pytest.mark.parametrize("config", [QWEN25_15B, QWEN3_06B], ids=["qwen2.5-1.5b", "qwen3-0.6b"])
def test_parameter_count_matches_the_transformers_model_built_from_the_config(config):
    """An independent check of the count: transformers builds the model (on the meta device, no memory)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    hf_config = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    assert ModelShape.from_config(config).num_params == sum(p.numel() for p in model.parameters())
