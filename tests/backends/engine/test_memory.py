"""The trl backend's memory path: chunked log-probs equal the plain ones, and training with the
memory path gives the same losses and gradient norms as TRL's own path."""

from __future__ import annotations

import zlib

import pytest

pytest.importorskip("trl", reason="the memory path needs rlvr-gym[trl]")

import torch

from rlvr_gym import envs
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.engine import memory
from rlvr_gym.backends.metrics import read_metrics
from rlvr_gym.backends.trl import trainer_class_for
from rlvr_gym.trainers.tiny_model import build_tiny_model
from rlvr_gym.verifiers import Verdict


def plain_logps(hidden, weight, bias, targets, temperature):
    logits = (hidden @ weight.T + bias) / temperature
    logp = torch.log_softmax(logits, dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1), entropy


@pytest.mark.parametrize(("token_chunk", "vocab_chunk"), [(7, 128), (1, 1000), (1024, 8192)])
def test_chunked_logps_and_entropy_equal_the_unchunked_ones_with_their_gradients(token_chunk, vocab_chunk):
    torch.manual_seed(0)
    hidden = torch.randn(3, 11, 16, requires_grad=True)
    weight = torch.randn(1000, 16, requires_grad=True)
    bias = torch.randn(1000, requires_grad=True)
    targets = torch.randint(0, 1000, (3, 11))
    upstream = torch.randn(3, 11)

    logp, ent = memory.chunked_completion_logps(
        hidden,
        weight,
        bias,
        targets,
        temperature=0.7,
        token_chunk=token_chunk,
        vocab_chunk=vocab_chunk,
        entropy=True,
    )
    chunked_grads = torch.autograd.grad((logp * upstream).sum() + ent.sum(), (hidden, weight, bias))
    ref_logp, ref_ent = plain_logps(hidden, weight, bias, targets, 0.7)
    plain_grads = torch.autograd.grad((ref_logp * upstream).sum() + ref_ent.sum(), (hidden, weight, bias))

    tol = dict(rtol=1e-4, atol=1e-4)  # the kernel folds tiles in fp32
    torch.testing.assert_close(logp, ref_logp, **tol)
    torch.testing.assert_close(ent, ref_ent, **tol)
    for got, want in zip(chunked_grads, plain_grads, strict=True):
        torch.testing.assert_close(got, want, **tol)


def test_chunked_logps_without_entropy_and_without_bias():
    hidden, weight = torch.randn(2, 5, 8), torch.randn(300, 8)
    targets = torch.randint(0, 300, (2, 5))
    logp, ent = memory.chunked_completion_logps(hidden, weight, None, targets, token_chunk=3, vocab_chunk=64)
    assert ent is None
    want = plain_logps(hidden, weight, torch.zeros(300), targets, 1.0)[0]
    torch.testing.assert_close(logp, want, rtol=1e-4, atol=1e-4)


def test_bad_chunk_sizes_and_shapes_are_refused():
    hidden, weight, targets = torch.randn(1, 4, 8), torch.randn(50, 8), torch.zeros(1, 4, dtype=torch.long)
    with pytest.raises(ValueError, match="token_chunk"):
        memory.chunked_completion_logps(hidden, weight, None, targets, token_chunk=0)
    with pytest.raises(ValueError, match="does not match"):
        memory.chunked_completion_logps(hidden, weight, None, targets[:, :3])


def test_each_switch_picks_the_trainer_class():
    from trl import GRPOTrainer

    assert trainer_class_for(RunConfig(chunked_logps=False, offload_activations=False)) is GRPOTrainer
    ours = trainer_class_for(RunConfig())
    assert issubclass(ours, GRPOTrainer) and ours.__name__ == "MemoryGRPOTrainer"
    with pytest.raises(ValueError, match="logps_vocab_chunk"):
        RunConfig(logps_vocab_chunk=0)


class ScoredEnv(envs.SingleTurnEnv):
    """Arith prompts scored by a hash of the completion: every group has reward variance."""

    splits = ("train",)

    def __init__(self) -> None:
        super().__init__()
        self.arith = envs.make("arith")
        self.rubric = lambda completion, task: Verdict.fail(
            "wrong_answer", score=(zlib.crc32(str(completion).encode()) % 1000) / 999
        )

    def load_tasks(self, split):
        return self.arith.tasks("train")[:32]

    def question(self, task):
        return self.arith.question(task)


@pytest.mark.slow
def test_training_with_the_memory_path_matches_trl_own_path(tmp_path, monkeypatch):
    """Two steps with the KL term on: step 1 checks the policy pass, step 2 also the reference pass."""
    from rlvr_gym.backends import trl as trl_backend

    env = ScoredEnv()
    model = build_tiny_model(tmp_path / "tiny", env.arith)
    calls = []
    original = memory.chunked_completion_logps

    def counted(*args, **kwargs):
        calls.append(kwargs.get("entropy"))
        return original(*args, **kwargs)

    monkeypatch.setattr(memory, "chunked_completion_logps", counted)

    def run(name, **switches):
        config = RunConfig(
            model=str(model),
            max_steps=2,
            num_generations=4,
            prompts_per_step=2,
            max_completion_length=12,
            learning_rate=1e-3,
            beta=0.04,
            save_steps=100,
            logps_token_chunk=5,
            logps_vocab_chunk=100,
            output_dir=str(tmp_path / name),
            **switches,
        )
        return read_metrics(trl_backend.train(env, config, model=model).output_dir)

    plain = run("plain", chunked_logps=False, gradient_checkpointing=False, offload_activations=False)
    assert calls == []
    ours = run("ours")
    assert True in calls and False in calls, "the policy and the reference pass must both be chunked"
    assert [r["reward/mean"] for r in ours] == [r["reward/mean"] for r in plain], "same seed, same samples"
    assert all(r["grad_norm"] > 0 for r in plain), "no gradient: the comparison would be empty"
    assert plain[1]["kl"] > 0, "step 2 must exercise the reference pass"
    for p, o in zip(plain, ours, strict=True):
        assert o["loss"] == pytest.approx(p["loss"], rel=1e-4, abs=1e-6)
        assert o["grad_norm"] == pytest.approx(p["grad_norm"], rel=1e-3)
        assert o["kl"] == pytest.approx(p["kl"], rel=1e-3, abs=1e-7)
        assert o["entropy"] == pytest.approx(p["entropy"], rel=1e-4)
