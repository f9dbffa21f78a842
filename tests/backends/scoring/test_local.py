"""Scoring never stalls: a verifier that hangs once costs one budget, not every later batch."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from rlvr_gym import envs
from rlvr_gym.backends.rewards import EnvRewards
from rlvr_gym.verifiers import NumberMatch, Rubric, Verdict
from tests.support.slow_checks import LOOP_BOMB, REGEX_BOMB, HostileToItsChecks
from tests.support.timing import bound


class HangsOnFirstBatch:
    """NumberMatch, except the very first call blocks until released (a hung verifier)."""

    def __init__(self) -> None:
        self.inner = NumberMatch("answer")
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, completion, task):
        self.calls += 1
        if self.calls == 1:
            self.release.wait(30)
        return self.inner(completion, task)


def score(rewards: EnvRewards, env, indices: list[int], logged: dict) -> list:
    tasks = [env.tasks("train")[i] for i in indices]
    completions = [f"<answer>{t['answer']}</answer>" for t in tasks]
    (reward,) = rewards.functions()
    return reward(
        prompts=[None] * len(tasks),
        completions=completions,
        task_split=["train"] * len(tasks),
        task_index=indices,
        log_metric=logged.__setitem__,
    )


def test_a_verifier_that_hangs_on_batch_one_leaves_batches_two_to_k_scored():
    env = envs.make("arith")
    hang = HangsOnFirstBatch()
    env.rubric = Rubric({"correct": hang})
    rewards = EnvRewards(env, num_generations=2, timeout_s=0.5)
    try:
        first: dict = {}
        started = time.perf_counter()
        assert score(rewards, env, [0, 1], first) == [None, None]  # unscored, not zeroed
        assert first["verifier/batch_timeouts"] == 1
        later_times = []
        for k in range(2, 6):
            logged: dict = {}
            t0 = time.perf_counter()
            assert score(rewards, env, [2 * k, 2 * k + 1], logged) == [1.0, 1.0], f"batch {k} unscored"
            later_times.append(time.perf_counter() - t0)
            assert logged["accuracy"] == 1.0 and "verifier/batch_timeouts" not in logged
            assert 0 <= logged["verifier/time_s"] < bound(0.5)
        assert max(later_times) < bound(0.5), later_times  # no batch queued behind the stuck one
        assert time.perf_counter() - started < bound(0.5 + 4 * 0.5)
        assert rewards.abandoned_pools == 1 and rewards.totals["batch_timeouts"] == 1
        assert rewards.scorer.isolation == "thread"  # the verifier holds a lock: it does not pickle
    finally:
        hang.release.set()
        rewards.close()


def test_the_stuck_thread_is_a_daemon_so_it_cannot_keep_the_process_alive():
    env = envs.make("arith")
    hang = HangsOnFirstBatch()
    env.rubric = Rubric({"correct": hang})
    rewards = EnvRewards(env, num_generations=2, timeout_s=0.2)
    try:
        score(rewards, env, [0, 1], {})
        stuck = [t for t in threading.enumerate() if t.name == "verify" and t.is_alive()]
        assert stuck and all(t.daemon for t in stuck)
    finally:
        hang.release.set()
        rewards.close()


class SleepySampler:
    """Every completion defines the entry point as a sleep past the wall limit: each one times out."""

    engine = "scripted"

    def __init__(self, env):
        self.env = env
        self.tasks = env.tasks("test")

    def sample(self, prompt, n, seed):
        task = next(t for t in self.tasks if self.env.prompt(t) == prompt)
        body = f"import time\ndef {task['entry_point']}(*args, **kwargs):\n    time.sleep(30)\n"
        return [f"```python\n{body}```"] * n


@pytest.mark.slow
def test_evaluate_scores_a_batch_at_a_time_on_the_sandbox_pool(tmp_path):
    """8 rollouts that each sleep into a timeout: on a pool of 4 they overlap (measured ~0.5x)."""
    from rlvr_gym.envs.humaneval import HumanEvalEnv
    from rlvr_gym.trainers.evaluate import evaluate
    from rlvr_gym.verifiers.code.pool import SandboxPool
    from rlvr_gym.verifiers.code.sandbox import Limits
    from tests.support.code import HUMANEVAL

    if not HUMANEVAL.exists():
        import pytest

        pytest.skip(f"offline HumanEval copy not found at {HUMANEVAL}")
    # restricted=False: RestrictedPython would refuse `import time` before the sandbox runs it.
    env = HumanEvalEnv(data_path=HUMANEVAL, limits=Limits(wall_s=1.0), pool=SandboxPool(4), restricted=False)

    def timed(batch_rollouts: int, folder: str) -> float:
        started = time.perf_counter()
        result = evaluate(
            env,
            "m",
            n=2,
            limit=4,
            split="test",
            output_dir=tmp_path / folder,
            sampler=SleepySampler(env),
            progress=False,
            batch_rollouts=batch_rollouts,
        )
        assert result.summary["reasons"] == {"timeout": 8}
        return time.perf_counter() - started

    one_at_a_time = timed(1, "sequential")  # the anchor, measured in the same test
    batched = timed(32, "batched")
    assert batched < 0.8 * one_at_a_time, f"batched {batched:.1f} s vs one at a time {one_at_a_time:.1f} s"


class SeenChars:
    """NumberMatch whose verdicts say how many characters reached it (read back from the
    verdicts, so it works in the scorer's worker process as in a thread)."""

    def __init__(self) -> None:
        self.inner = NumberMatch("answer")

    def __call__(self, completion, task):
        v = self.inner(completion, task)
        return Verdict(v.score, v.passed, v.reason, v.answer, {**v.details, "seen_chars": len(completion)})


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_an_oversized_completion_costs_only_itself_and_never_reaches_a_verifier(isolation):
    """A 10 MB completion once held a verifier's regex (and the GIL) 5-8 s past a 2 s budget;
    the scorer now answers it bad_format itself, and its seven neighbours are scored."""
    from rlvr_gym.backends.scoring.local import LocalScorer

    env = envs.make("arith")
    env.rubric = SeenChars()
    tasks = [env.tasks("train")[i] for i in range(8)]
    completions = [f"<answer>{t['answer']}</answer>" for t in tasks]
    completions[3] = "<answer>" + "9 " * 5_000_000  # 10 MB
    scorer = LocalScorer(env, isolation=isolation)
    try:
        # The worker's start is paid once, not per batch; started from a thread that then ends
        # (asyncio.to_thread's, shut down with its loop), it outlives that thread.
        asyncio.run(scorer.ascore(completions[:1], tasks[:1]))
        started = time.perf_counter()
        verdicts = scorer.score(completions, tasks, timeout_s=2.0)
        took = time.perf_counter() - started
    finally:
        scorer.close()
    assert scorer.isolation == isolation
    assert [v.passed for v in verdicts] == [True] * 3 + [False] + [True] * 4
    assert verdicts[3].reason.value == "bad_format" and "over the scorer's" in verdicts[3].details["why"]
    assert "seen_chars" not in verdicts[3].details  # the 10 MB never reached the verifier
    assert all(v.details["seen_chars"] < 100 for i, v in enumerate(verdicts) if i != 3)
    assert took < bound(1.0), took


@pytest.mark.slow
def test_a_slow_item_costs_only_itself_and_never_freezes_the_trainer():
    """One hostile item may cost only itself. A regex that holds the GIL froze the whole
    process past the budget and left every neighbour unscored; now each slow item is its own
    ``timeout`` (score 0, the submission's failure), its neighbours are scored, the call returns
    within the batch's budget, and the next batch is scored as usual."""
    from rlvr_gym.backends.scoring.local import LocalScorer

    env = envs.make("arith")
    env.rubric = Rubric({"correct": HostileToItsChecks()})
    tasks = [env.tasks("train")[i] for i in range(8)]
    completions = [f"<answer>{t['answer']}</answer>" for t in tasks]
    completions[2] = REGEX_BOMB  # ~11 s of backtracking with the GIL held
    completions[5] = LOOP_BOMB  # ~10 s of bytecode
    scorer = LocalScorer(env, item_timeout_s=0.3)
    try:
        scorer.score(completions[:1], tasks[:1])  # the worker's start is paid once, not per batch
        started = time.perf_counter()
        verdicts = scorer.score(completions, tasks, timeout_s=4.0)
        took = time.perf_counter() - started
        assert all(v is not None for v in verdicts), verdicts
        assert [v.reason.value for v in verdicts] == ["correct"] * 2 + ["timeout"] + ["correct"] * 2 + [
            "timeout"
        ] + ["correct"] * 2
        assert verdicts[2].score == verdicts[5].score == 0.0
        assert took < bound(4.0), took
        assert scorer.stats["item_timeouts"] == 2
        again = scorer.score(completions[:2], tasks[:2], timeout_s=4.0)
        assert [v.passed for v in again] == [True, True]
    finally:
        scorer.close()


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "5"])
def test_a_bad_item_budget_is_a_clear_error(bad):
    from rlvr_gym.backends.scoring.local import LocalScorer
    from rlvr_gym.error import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="item_timeout_s must be a finite number > 0"):
        LocalScorer(envs.make("arith"), item_timeout_s=bad)


def test_no_model_text_reaches_pickle_loads_in_the_trainers_process(monkeypatch):
    """The worker's messages (verdicts quote answers) travel as JSON: the trainer never unpickles
    a byte the model wrote, however it is wrapped."""
    import pickle
    from multiprocessing import reduction

    from rlvr_gym.backends.scoring.local import LocalScorer

    canary = "zq-canary-\ud800-7341"  # a lone surrogate too: JSON carries it, UTF-8 would not
    unpickled: list[bytes] = []
    real = pickle.loads

    def recording(data, *args, **kwargs):
        unpickled.append(bytes(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(pickle, "loads", recording)
    monkeypatch.setattr(reduction.ForkingPickler, "loads", staticmethod(recording))
    env = envs.make("arith")
    tasks = [env.tasks("test")[i] for i in range(3)]
    completions = [f"<answer>{canary}</answer>", f"<answer>{tasks[1]['answer']}</answer>", canary]
    scorer = LocalScorer(env)
    try:
        verdicts = scorer.score(completions, tasks, timeout_s=60)
    finally:
        scorer.close()
    assert scorer.isolation == "process", "the test must see the worker process's path"
    assert [v.passed for v in verdicts] == [False, True, False]
    assert verdicts[0].answer is not None and canary in verdicts[0].answer  # it came back, as JSON
    needle = canary.encode("utf-8", "surrogatepass")
    assert not any(needle in blob or b"zq-canary" in blob for blob in unpickled)


def test_a_completion_json_cannot_carry_is_its_own_bad_format():
    from rlvr_gym.backends.scoring.local import LocalScorer

    env = envs.make("arith")
    tasks = [env.tasks("test")[i] for i in range(2)]
    scorer = LocalScorer(env)
    try:
        verdicts = scorer.score([b"<answer>1</answer>", f"<answer>{tasks[1]['answer']}</answer>"], tasks, timeout_s=60)
    finally:
        scorer.close()
    assert verdicts[0].reason.value == "bad_format" and "not bytes" in verdicts[0].details["why"]
    assert verdicts[1].passed
