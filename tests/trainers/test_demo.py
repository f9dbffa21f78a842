"""The tiny-model demo fits the env: completions long enough for its answers, a warm start whose
time is measured, not guessed, and never redone after a run is killed."""

from __future__ import annotations

import itertools
import json

import pytest

pytest.importorskip("transformers", reason="the tiny model needs rlvr-gym[trl]")

import rlvr_gym as rg
from rlvr_gym.trainers.demo import demo_config
from rlvr_gym.trainers.tiny_model import ANSWER_TAGS, build_tokenizer, env_corpus


def test_the_demo_completion_length_fits_every_countdown_reference_answer():
    """Before: 8 tokens for every env; 52% of countdown's reference answers need more, so its
    reward stayed 0 whatever GRPO did."""
    config = demo_config("countdown")
    env = rg.make("countdown", **config.env_kwargs)
    tokenizer = build_tokenizer(list(env_corpus(env)), extra_tokens=ANSWER_TAGS)
    rows = list(itertools.islice(env.tasks("train"), 256))
    lengths = [
        len(tokenizer(env.reference_completion(r), add_special_tokens=False)["input_ids"]) for r in rows
    ]
    assert max(lengths) <= config.max_completion_length, (max(lengths), config.max_completion_length)
    assert demo_config("arith").max_completion_length == 8  # the README's run keeps its settings
    assert demo_config("countdown", max_completion_length=6).max_completion_length == 6  # a flag wins


@pytest.mark.slow
def test_a_run_killed_after_its_warm_start_reuses_it_and_resumes(tmp_path, capsys, monkeypatch):
    """Before: the warm start was announced as "about 5 s" whatever it took, a restart redid it,
    and --resume refused a run killed before its first checkpoint."""
    from rlvr_gym import backends

    trl = backends.get("trl")
    calls = []

    def killed(env, config, *, model, resume, **options):
        calls.append((str(model), resume))
        raise KeyboardInterrupt  # the run is killed once GRPO starts

    monkeypatch.setattr(trl, "train", killed)
    config = demo_config("arith", warm_start_steps=12, max_steps=2, output_dir=str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        rg.train("arith", config, backend="trl")
    first = capsys.readouterr().out
    assert "s a step here, about" in first, "the warm start's time must be measured and said"
    assert json.loads((tmp_path / "warm-start" / "warm_start.json").read_text())["steps"] == 12
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n')  # it had logged a step: "stopped"
    with pytest.raises(KeyboardInterrupt):
        rg.train("arith", config, backend="trl", resume=True)
    again = capsys.readouterr().out
    assert "reusing the finished warm start" in again and "supervised warm start" not in again
    assert calls[-1] == (str(tmp_path / "warm-start"), False)  # GRPO again, from the warm start
    with pytest.raises(KeyboardInterrupt):  # other warm-start settings: not reused
        rg.train("arith", config.replace(warm_start_steps=13), backend="trl", resume=True)
    assert "supervised warm start: 13 steps" in capsys.readouterr().out
