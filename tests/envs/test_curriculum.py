"""arith's curriculum knob and ``trainer_state`` reaching it through the reward functions."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlvr_gym import envs
from rlvr_gym.error import InvalidArgumentError

STAGES = [(0, {"num_steps": 1}), (10, {"num_steps": 3, "max_operand": 90}), (20, {"operations": "*"})]


def _steps(task):
    return len(task["working"].splitlines())


def test_each_stage_is_a_block_of_tasks_at_its_difficulty():
    env = envs.make("arith", train_size=50, curriculum=STAGES)
    train = env.tasks("train")
    assert len(train) == 150
    assert {_steps(train[i]) for i in env.stage_indices(0)} == {1}
    assert {_steps(train[i]) for i in env.stage_indices(1)} == {3}
    assert all("×" in train[i]["working"] for i in env.stage_indices(2))
    assert all(_steps(t) == 2 and "×" in t["working"] for t in env.tasks("test"))  # the last stage


def test_schedule_follows_the_step_or_a_trainer_state():
    env = envs.make("arith", train_size=50, curriculum=STAGES)
    assert [env.schedule(step) for step in (0, 9, 10, 19, 20, 10_000)] == [0, 0, 1, 1, 2, 2]
    assert env.schedule(SimpleNamespace(global_step=12)) == 1 and env.stage_indices() == range(50, 100)
    assert envs.make("arith").schedule(99) == 0  # no curriculum: one stage


def test_without_a_curriculum_the_tasks_are_unchanged():
    plain, staged = envs.make("arith"), envs.make("arith", curriculum=[(0, {})])
    assert [plain.tasks("train")[i] for i in range(5)] == [staged.tasks("train")[i] for i in range(5)]


@pytest.mark.parametrize(
    "curriculum",
    [[(5, {"num_steps": 1})], [(0, {}), (0, {})], [(0, {"seed": 3})], [(0, {"num_steps": 0})], [(0, 1)]],
)
def test_a_bad_curriculum_is_refused(curriculum):
    with pytest.raises(InvalidArgumentError, match="curriculum"):
        envs.make("arith", curriculum=curriculum)


def test_reward_functions_move_the_env_and_the_dataset_follows():
    pytest.importorskip("datasets")
    from rlvr_gym.backends.trl_adapter import curriculum_dataset, reward_funcs

    env = envs.make("arith", train_size=50, curriculum=STAGES)
    rows = iter(curriculum_dataset(env))
    assert all(next(rows)["task_index"] < 50 for _ in range(5))
    first = reward_funcs(env)[0]
    task = env.tasks("train")[3]
    scores = first(
        prompts=[None],
        completions=[f"<answer>{task['answer']}</answer>"],
        task_split=["train"],
        task_index=[3],
        trainer_state=SimpleNamespace(global_step=25),
    )
    assert scores == [1.0] and env.stage == 2
    assert all(100 <= next(rows)["task_index"] < 150 for _ in range(5))
