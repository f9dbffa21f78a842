"""The public TRL adapter: what a user's own GRPOTrainer script gets from an env."""

from __future__ import annotations

import pytest

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

import rlvr_gym as rg  # noqa: E402
from rlvr_gym.backends.trl_adapter import dataset, env_rewards, reward_funcs, reward_weights  # noqa: E402
from rlvr_gym.error import InvalidArgumentError  # noqa: E402
from rlvr_gym.verifiers import Rubric  # noqa: E402
from tests.support.doc_blocks import ROOT, named  # noqa: E402

TRL_PAGE = ROOT / "docs" / "trl-integration.md"


def _call(functions, rows, completions):
    columns = {key: [row[key] for row in rows] for key in ("task_env", "task_split", "task_index")}
    return [f(prompts=[row["prompt"] for row in rows], completions=completions, **columns) for f in functions]


def test_rewards_follow_the_task_through_shuffling_and_sharding():
    env = rg.make("arith", train_size=40)
    rows = list(dataset(env, "train").shuffle(seed=3).shard(num_shards=2, index=1))
    assert len(rows) == 20 and [r["task_index"] for r in rows] != sorted(r["task_index"] for r in rows)
    completions = [
        f"<answer>{row['task_answer']}</answer>" if i % 2 else "<answer>-1</answer>"
        for i, row in enumerate(rows)
    ]
    # a second process builds its own env from the same spec: its functions must agree
    other = rg.make(env.spec.id, train_size=40)
    here, there = _call(reward_funcs(env), rows, completions), _call(reward_funcs(other), rows, completions)
    assert here == there
    correct, proximity = here
    assert correct == [float(i % 2) for i in range(len(rows))]
    expected = [
        env.verify(c, env.tasks("train")[r["task_index"]]).details["scores"]
        for c, r in zip(completions, rows, strict=True)
    ]
    assert proximity == [s["proximity"] for s in expected]
    assert reward_weights(env) == pytest.approx([2 / 3, 1 / 3])


def test_verifier_errors_are_none_and_rows_of_another_env_are_refused():
    env = rg.make("arith")

    def broken(completion, task):
        raise RuntimeError("verifier bug")

    env.rubric = Rubric({"correct": broken})
    rows = list(dataset(env, "train").select(range(2)))
    assert _call(reward_funcs(env), rows, ["a", "b"]) == [[None, None]]
    gsm8k_rows = [{**row, "task_env": "gsm8k-v0"} for row in rows]
    with pytest.raises(InvalidArgumentError, match="same env"):
        _call(reward_funcs(env), gsm8k_rows, ["a", "b"])


def test_a_gymnasium_made_env_gives_the_same_rows_and_rewards():
    """``gymnasium.make("rlvr_gym/arith-v0")`` hands back our env in Gymnasium's wrappers: the
    helpers take it, and its rows name the env by the id ``rlvr_gym.make`` gives."""
    import gymnasium

    wrapped, ours = gymnasium.make("rlvr_gym/arith-v0"), rg.make("arith-v0")
    rows = dataset(wrapped, "test").select(range(3))
    assert rows["task_env"] == ["arith-v0"] * 3 and rows["prompt"] == dataset(ours, "test")["prompt"][:3]
    assert reward_weights(wrapped) == reward_weights(ours)
    completions = [
        wrapped.unwrapped.reference_completion(wrapped.unwrapped.tasks("test")[i]) for i in range(3)
    ]
    assert _call(reward_funcs(wrapped), list(rows), completions) == _call(
        reward_funcs(ours), list(rows), completions
    )


def test_group_size_is_read_off_the_batch():
    env = rg.make("arith")
    rewards = env_rewards(env)
    rows = [row for row in dataset(env, "train").select(range(2)) for _ in range(3)]  # 2 prompts x 3
    logged: dict[str, float] = {}
    answers = [f"<answer>{row['task_answer']}</answer>" for row in rows]
    completions = [answers[0], "x", "y", answers[3], answers[4], "z"]
    columns = {key: [row[key] for row in rows] for key in ("task_env", "task_split", "task_index")}
    rewards.functions()[0](prompts=None, completions=completions, log_metric=logged.__setitem__, **columns)
    assert logged["accuracy"] == pytest.approx(0.5) and logged["advantage/std"] > 0
    rewards.close()


@pytest.mark.slow
def test_the_docs_own_trl_script_trains_two_steps_and_logs_each_component(tmp_path, monkeypatch):
    """The docs' own-TRL-script block, run exactly as written (the docs test leaves it to this one)."""
    block = named(TRL_PAGE, "own-trl-script")
    monkeypatch.chdir(tmp_path)  # the block writes tiny-arith/ and runs/ where it is run
    namespace: dict = {"__name__": "__main__"}
    exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102 - our own docs
    trainer = namespace["trainer"]
    assert trainer.state.global_step == 2
    logs = [row for row in trainer.state.log_history if "rewards/correct/mean" in row]
    assert len(logs) == 2
    for row in logs:
        assert {"rewards/correct/mean", "rewards/proximity/mean", "accuracy", "verifier/errors"} <= row.keys()
        weighted = 2 / 3 * row["rewards/correct/mean"] + 1 / 3 * row["rewards/proximity/mean"]
        assert row["reward"] == pytest.approx(weighted, abs=1e-6)


def test_device_args_let_a_grpo_config_be_made_on_this_machine(tmp_path):
    """Before: GRPOConfig(output_dir=...) on a CPU raised "Your setup doesn't support bf16/gpu"
    unless the script added use_cpu=True, bf16=False (which the README's script did not show)."""
    import torch
    from trl import GRPOConfig

    from rlvr_gym.backends.trl_adapter import device_args

    config = GRPOConfig(output_dir=str(tmp_path), **device_args())
    assert config.use_cpu == (not torch.cuda.is_available())
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="bf16"):
            GRPOConfig(output_dir=str(tmp_path))
