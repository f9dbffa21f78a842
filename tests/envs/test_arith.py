import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_gym import envs
from rlvr_gym.envs.arith import ArithEnv, generate_task

knobs = st.fixed_dictionaries(
    {
        "num_steps": st.integers(1, 6),
        "max_operand": st.integers(1, 10_000),
        "operations": st.sets(st.sampled_from("+-*"), min_size=1).map("".join),
        "allow_negative": st.booleans(),
        "word_problems": st.booleans(),
    }
)


@settings(max_examples=150)
@given(
    seed=st.integers(-(2**63), 2**63),
    split=st.sampled_from(["train", "test"]),
    index=st.integers(0, 10**9),
    params=knobs,
)
def test_a_task_is_a_pure_function_of_seed_split_and_index(seed, split, index, params):
    task = generate_task(seed, split, index, **params)
    assert generate_task(seed, split, index, **params) == task
    assert task["index"] == index and task["split"] == split


@settings(max_examples=150)
@given(seed=st.integers(0, 10**6), index=st.integers(0, 10**6), params=knobs)
def test_the_answer_follows_from_the_worked_steps(seed, index, params):
    """Replays the working lines independently of the generator and checks the chain."""
    task = generate_task(seed, "train", index, **params)
    lines = task["working"].splitlines()
    assert len(lines) == params["num_steps"]
    value = None
    for line in lines:
        left, op, right, result = re.fullmatch(r"(-?\d+) ([+\-×]) (\d+) = (-?\d+)", line).groups()
        assert value is None or int(left) == value
        expected = {"+": int(left) + int(right), "-": int(left) - int(right), "×": int(left) * int(right)}[op]
        assert int(result) == expected
        value = expected
    assert task["answer"] == str(value)
    if not params["allow_negative"]:
        assert value >= 0


def test_the_env_is_deterministic_across_instances_and_differs_across_seeds():
    a, b, other = envs.make("arith"), envs.make("arith"), envs.make("arith", seed=1)
    assert list(a.tasks("test")[:50]) == list(b.tasks("test")[:50])
    assert [t["question"] for t in a.tasks("test")[:50]] != [t["question"] for t in other.tasks("test")[:50]]
    assert a.tasks("train")[0]["question"] != a.tasks("test")[0]["question"]


def test_difficulty_knobs_shape_the_tasks():
    hard = envs.make("arith", num_steps=5, max_operand=1000, operations="*+", word_problems=False)
    task = hard.tasks("train")[7]
    assert task["question"].startswith("Compute ") and task["question"].count("(") == 4
    assert len(task["working"].splitlines()) == 5
    assert len(envs.make("arith", train_size=3).tasks("train")) == 3


def test_task_sequence_supports_negative_indices_slices_and_bounds():
    tasks = ArithEnv(test_size=5).tasks("test")
    assert tasks[-1] == tasks[4] and tasks[1:3] == [tasks[1], tasks[2]] and len(list(tasks)) == 5
    with pytest.raises(IndexError):
        tasks[5]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_steps": 0}, "num_steps"),
        ({"operations": "/"}, "operations"),
        ({"operations": ""}, "operations"),
        ({"seed": "zero"}, "seed"),
        ({"train_size": True}, "train_size"),
    ],
)
def test_bad_knobs_are_rejected_with_the_parameter_name(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ArithEnv(**kwargs)
