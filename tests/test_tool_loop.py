"""Tool envs on every loop: one task per GRPO group, and one score for one episode whether it is
played through ``env.step``, TRL's ``environment_factory`` or ``evaluate()``."""

from __future__ import annotations

from typing import Any

import pytest

from rlvr_gym import envs
from rlvr_gym.error import InvalidArgument

pytest.importorskip("trl", reason="needs rlvr-gym[trl]")

TOOL_ENVS = sorted(
    i
    for i in envs.registry
    if "/" not in i and isinstance(envs.spec(i).load(), type) and issubclass(envs.spec(i).load(), envs.MultiTurnEnv)
)


@pytest.fixture(scope="module", params=TOOL_ENVS)
def tool_env(request):
    env = envs.make(request.param)
    yield env
    env.close()


def test_every_builtin_tool_env_is_covered():
    assert {"gsm8k-python-v0", "math500-python-v0", "humaneval-feedback-v0"} <= set(TOOL_ENVS)


def test_a_row_without_a_task_is_refused_not_posed_the_next_seeded_task():
    """TRL's placeholder rows (no train_dataset) would pose each rollout of a group another task."""
    from rlvr_gym.backends.trl_adapter import environment_factory

    Env = environment_factory("gsm8k-python")
    with pytest.raises(InvalidArgument, match="train_dataset"):
        Env().reset(prompt=[{"role": "user", "content": ""}])
    with pytest.raises(InvalidArgument, match="same env"):
        Env().reset(task_env="gsm8k-v0", task_split="train", task_index=0)


def test_a_group_posed_two_tasks_is_refused():
    from rlvr_gym.backends.tool_rewards import EpisodeRewards, check_one_task_per_group
    from rlvr_gym.backends.trl_adapter import environment_factory

    check_one_task_per_group([("train", 1)] * 4 + [("train", 2)] * 4, 4)
    with pytest.raises(InvalidArgument, match="2 different tasks"):
        check_one_task_per_group([("train", 1), ("train", 1), ("train", 2), ("train", 2)], 4)
    env = envs.make("gsm8k-python")
    Env = environment_factory(env)
    rollouts = [Env(), Env()]
    for rollout, index in zip(rollouts, (0, 1), strict=True):
        rollout.reset(task_split="train", task_index=index)
    rewards = EpisodeRewards(env, num_generations=2)
    with pytest.raises(InvalidArgument, match="different tasks"):
        rewards.reward(prompts=[None, None], completions=[[], []], environments=rollouts)


def test_rows_drawn_as_trl_draws_them_pose_one_task_per_group(tool_env):
    """TRL's own sampler over our dataset, and ``reset(**row)`` per rollout: count the distinct
    tasks each group of ``num_generations`` rollouts was posed."""
    from trl.trainer.utils import RepeatSampler

    from rlvr_gym.backends.tool_rewards import check_one_task_per_group
    from rlvr_gym.backends.trl_adapter import dataset, environment_factory

    group = 4
    split = tool_env.splits[0]
    rows = dataset(tool_env, split)
    order = list(RepeatSampler(rows, mini_repeat_count=group, batch_size=3, repeat_count=1, seed=7))[: group * 6]
    Env = environment_factory(tool_env)
    posed = []
    for i in order:
        rollout = Env()
        assert rollout.reset(**rows[i]) is None  # the prompt is the row's; nothing appended
        posed.append(rollout._posed())
    groups = [posed[start : start + group] for start in range(0, len(posed), group)]
    assert [len(set(g)) for g in groups] == [1] * len(groups)
    assert len({g[0] for g in groups}) > 1  # ... and the groups are not all one task
    check_one_task_per_group(posed, group)


class ReplaySampler:
    """A policy that writes a task's reference episode, message by message (found by its question)."""

    engine = "replay"

    def __init__(self, env: envs.MultiTurnEnv, split: str) -> None:
        self.episodes = {
            env.prompt(task)[-1]["content"]: env.reference_episode(task) for task in env.tasks(split)[:2]
        }

    def sample(self, prompt: Any, n: int, seed: int, *, tools: list | None = None) -> list[Any]:
        assert tools, "a tool env's prompt is rendered with its tools"
        question = next(m["content"] for m in prompt if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in prompt)
        return [self.episodes[question][turn]] * n


def _trl_rollout(env: envs.MultiTurnEnv, row: dict[str, Any], episode: list[dict[str, Any]]):
    """Play ``episode`` the way TRL's tool loop does: each tool call runs the bridge's method and
    its answer is appended as a ``tool`` message; the rollout ends at a message without tool
    calls, which the env is never shown. Returns the instance and TRL's completion messages."""
    from rlvr_gym.backends.trl_adapter import environment_factory

    rollout = environment_factory(env)()
    rollout.reset(**row)
    completion: list[dict[str, Any]] = []
    for message in episode:
        completion.append(message)
        for call in message.get("tool_calls", []):
            function = call["function"]
            answer = getattr(rollout, function["name"])(**function["arguments"])
            completion.append({"role": "tool", "name": function["name"], "content": str(answer)})
    return rollout, completion


def test_the_reference_episode_scores_the_same_through_step_trl_and_evaluate(tool_env, tmp_path):
    from rlvr_gym.backends.trl_adapter import dataset, reward_funcs
    from rlvr_gym.trainers.evaluate import evaluate

    split = tool_env.splits[0]
    row = dataset(tool_env, split)[0]
    task = tool_env.tasks(split)[0]
    episode = tool_env.reference_episode(task)
    assert not episode[-1].get("tool_calls"), "the reference episode ends with a plain final message"

    tool_env.reset(options={"index": 0, "split": split})
    for message in episode:
        _, by_step, terminated, truncated, info = tool_env.step(message)
    assert terminated and not truncated

    rollout, completion = _trl_rollout(tool_env, row, episode)
    (episode_reward,) = reward_funcs(tool_env)
    (by_trl,) = episode_reward(
        prompts=[row["prompt"]],
        completions=[completion],
        environments=[rollout],
        task_split=[row["task_split"]],
        task_index=[row["task_index"]],
    )

    result = evaluate(
        tool_env, "replay", n=1, split=split, limit=1, output_dir=tmp_path, sampler=ReplaySampler(tool_env, split),
        progress=False,
    )
    (eval_row,) = result.rollouts
    assert by_step == by_trl == result.summary["reward/mean"] == 1.0
    assert eval_row["verdict"]["passed"] and eval_row["turns"] == info["turns"]
    roles = [m["role"] for m in eval_row["completion"]]
    assert roles.count("assistant") == len(episode)
    assert roles.count("tool") == sum(len(m.get("tool_calls", [])) for m in episode)


def test_a_final_plain_answer_under_trl_is_scored_as_env_step_scores_it():
    """The prompt invites a plain ``<answer>`` reply: under TRL's loop it is the answer too."""
    from rlvr_gym.backends.trl_adapter import dataset, reward_funcs

    env = envs.make("gsm8k-python")
    row = dataset(env, "train")[0]
    answer = env.tasks("train")[0]["answer"]
    rewards = []
    for final in (f"<answer>{answer}</answer>", "<answer>-1</answer>", "I do not know"):
        rollout, completion = _trl_rollout(env, row, [{"role": "assistant", "content": final}])
        rewards += reward_funcs(env)[0](
            prompts=[row["prompt"]], completions=[completion], environments=[rollout]
        )
    assert rewards == [1.0, 0.0, 0.0]
    env.close()


def test_tool_env_rewards_refuse_to_score_outside_the_tool_loop():
    from rlvr_gym.backends.trl_adapter import reward_funcs

    env = envs.make("gsm8k-python")
    with pytest.raises(InvalidArgument, match="environment_factory"):
        reward_funcs(env)[0](prompts=["p"], completions=["<answer>1</answer>"], task_split=["train"], task_index=[0])
    env.close()
