"""The rubric an env holds is the one thing that scores it — whatever the rubric is.

For every registered env, as built and with its rubric replaced three ways (another Rubric, the
same components plus one more, a plain function), ``step()``, ``verify_batch``, the training
reward functions, eval and the audit must score identically. Before the batch-first protocol a
code env's batch path called its original code verifier directly: a swapped rubric was ignored
by training, eval and the audit, and an extra component crashed ``verify_batch`` with a KeyError.
"""

from __future__ import annotations

import pytest

import rlvr_gym as rg
from rlvr_gym.envs.audit import audit
from rlvr_gym.verifiers import LengthBand, Reason, Rubric, TagFormat, Verdict
from tests.support.registered import ids, make_or_skip

SHAPES = ("as-built", "swapped", "extra-component", "plain-function")
FUNCTION_SCORE = 0.375  # what the plain-function rubric gives every completion that is not empty


def plain_function_rubric(completion: str, task) -> Verdict:
    """A rubric that is a bare function, as the README allows (``env.rubric = some_function``)."""
    if not completion.strip():
        return Verdict.fail(Reason.NO_ANSWER)
    return Verdict.fail(Reason.WRONG_ANSWER, score=FUNCTION_SCORE)


def reshape(env, shape: str) -> None:
    original = env.rubric
    if shape == "swapped":
        env.rubric = Rubric({"format": TagFormat()})
    elif shape == "extra-component":
        components = dict(original.components) if isinstance(original, Rubric) else {"correct": original}
        env.rubric = Rubric(
            {**components, "length": LengthBand(0, 40)},
            weights={"length": 0.5},
            passed_by=next(iter(components)),
        )
    elif shape == "plain-function":
        env.rubric = plain_function_rubric


def sample(env, n_tasks: int = 2) -> tuple[list[str], list, list[int]]:
    """Reference and wrong completions for the first tasks of the test split."""
    split = "test" if "test" in env.splits else env.splits[0]
    tasks = env.tasks(split)
    completions, rows, indices = [], [], []
    for index in range(min(n_tasks, len(tasks))):
        for completion in [env.reference_completion(tasks[index]), *env.wrong_completions(tasks[index])]:
            completions.append(completion)
            rows.append(tasks[index])
            indices.append(index)
    return completions, rows, indices


def same(a: Verdict, b: Verdict) -> tuple:
    return (round(a.score, 9), a.passed, a.reason) == (round(b.score, 9), b.passed, b.reason), (a, b)


class Replay:
    """A sampler that returns completions written beforehand, so eval's scoring is what is tested."""

    engine = "replay"

    def __init__(self, by_prompt: dict[str, list[str]]) -> None:
        self.by_prompt = by_prompt

    def sample(self, prompt, n: int, seed: int, *, tools=None) -> list[str]:
        if repr(prompt) in self.by_prompt:
            return self.by_prompt[repr(prompt)][:n]
        # a later turn of a tool episode: like the step loop above, send the same completion again
        first = next(m for m in prompt if isinstance(m, dict) and m.get("role") == "assistant")
        return [first["content"]] * n


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("env_id", ids())
def test_every_scorer_goes_through_the_rubric(env_id: str, shape: str, tmp_path) -> None:
    env = make_or_skip(env_id)
    try:
        reshape(env, shape)
        split = "test" if "test" in env.splits else env.splits[0]
        completions, tasks, indices = sample(env)
        batch = env.verify_batch(completions, tasks)
        assert all(v.reason is not Reason.ERROR for v in batch), batch

        # step(): one episode per completion (a multi-turn env that asks for a retry gets the same
        # completion again until the episode ends: its verdict is the final submission's)
        retried = set()  # items whose episode asked for a retry: TRL's loop ends at their first message
        for i, (completion, index, verdict) in enumerate(zip(completions, indices, batch, strict=True)):
            env.reset(options={"index": index, "split": split})
            terminated = truncated = False
            steps = 0
            while not (terminated or truncated):
                _, _, terminated, truncated, info = env.step(completion)
                steps += 1
            assert same(info["verdict"], verdict)
            if steps > 1:
                retried.add(i)

        # training rewards: the weighted sum of TRL's per-component functions is the env's score
        from rlvr_gym.backends.trl_adapter import reward_funcs, reward_weights

        functions, weights = reward_funcs(env), reward_weights(env)
        columns = {"task_split": [split] * len(completions), "task_index": indices}
        if isinstance(env, rg.envs.MultiTurnEnv):  # TRL's tool loop: one bridge instance a rollout
            from rlvr_gym.backends.trl_adapter import environment_factory

            rollouts = []
            for index in indices:
                rollout = environment_factory(env)()
                rollout.reset(task_split=split, task_index=index)
                rollouts.append(rollout)
            messages = [[{"role": "assistant", "content": c}] for c in completions]
            per_function = [f(prompts=None, completions=messages, environments=rollouts) for f in functions]
        else:
            per_function = [f(prompts=None, completions=completions, **columns) for f in functions]
        for i, verdict in enumerate(batch):
            if i in retried:  # a feedback env's retries: a different episode under TRL (tests/backends/test_tool_bridge.py)
                continue
            total = sum(w * scores[i] for w, scores in zip(weights, per_function, strict=True))
            assert total == pytest.approx(verdict.score, abs=1e-9), (i, verdict)

        # eval: the same completions, sampled by a replaying sampler, score the same
        from rlvr_gym.trainers.evaluate import evaluate

        per_task: dict[str, list[str]] = {}
        for completion, index in zip(completions, indices, strict=True):
            per_task.setdefault(repr(env.prompt(env.tasks(split)[index])), []).append(completion)
        n = min(len(c) for c in per_task.values())
        result = evaluate(
            env, "replay", n=n, split=split, limit=len(per_task), output_dir=tmp_path / "eval",
            sampler=Replay(per_task), progress=False,
        )  # fmt: skip
        expected = {}
        for index, verdict in zip(indices, batch, strict=True):
            expected.setdefault(index, []).append(verdict)
        retried_samples = {(indices[i], [j for j in range(len(indices)) if indices[j] == indices[i]].index(i)) for i in retried}
        for row in result.rollouts:
            if (row["index"], row["sample"]) in retried_samples:  # a feedback env's retries (see above)
                continue
            want = expected[row["index"]][row["sample"]]
            assert (row["verdict"]["score"], row["verdict"]["reason"]) == pytest.approx(
                (want.score, want.reason.value)
            )

        # the audit scores through the same rubric (a plain function gives its mark to everything)
        report = audit(env, n_tasks=1, fast=True)
        assert not any(r.errors for r in report.families.values()), report.render()
        if shape == "plain-function":
            assert {r.max_reward for r in report.families.values()} <= {0.0, FUNCTION_SCORE}
            assert any(r.max_reward == FUNCTION_SCORE for r in report.families.values())
    finally:
        env.close()


def test_a_bug_in_a_batch_is_an_error_verdict_per_item() -> None:
    """A component whose ``verify_batch`` raises or miscounts costs its items an ``error`` verdict,
    never an exception out of the training step."""

    class Raising:
        def __call__(self, completion, task):
            return Verdict.correct()

        def verify_batch(self, completions, tasks):
            raise RuntimeError("boom")

    class Miscounting(Raising):
        def verify_batch(self, completions, tasks):
            return [Verdict.correct()]

    env = rg.make("arith")
    tasks = list(env.tasks("test")[:3])
    for broken in (Raising(), Miscounting()):
        env.rubric = Rubric({"correct": env.rubric, "extra": broken})
        verdicts = env.verify_batch(["<answer>1</answer>", 7, "x"], tasks)
        assert verdicts[1].reason is Reason.BAD_FORMAT  # not text: answered before any verifier
        assert [verdicts[0].reason, verdicts[2].reason] == [Reason.ERROR, Reason.ERROR]
        env.rubric = env.rubric.components["correct"]


def test_a_batch_verifier_gets_the_batch_whole() -> None:
    """A component with ``verify_batch`` is called once per batch, not once per item."""

    class Counting:
        calls = 0

        def __call__(self, completion, task):
            raise AssertionError("the per-item path must not be taken")

        def verify_batch(self, completions, tasks):
            Counting.calls += 1
            return [Verdict.correct() for _ in completions]

    env = rg.make("arith")
    env.rubric = Rubric({"correct": Counting()})
    verdicts = env.verify_batch(["a", "b", "c", "d"], list(env.tasks("test")[:4]))
    assert [v.passed for v in verdicts] == [True] * 4
    assert Counting.calls == 1
