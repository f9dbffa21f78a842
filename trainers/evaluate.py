"""``evaluate(env, model, config)``: sample completions, score them with the env, summarise.

The settings are an :class:`~rlvr_gym.trainers.eval_config.EvalConfig` (``rlvr-gym eval``'s flags
are made from it). ``evaluate`` is a short sequence of steps: the env to score, the folder and
its recorded settings, the missing rollouts sampled and scored a chunk at a time
(:func:`_score_chunk`, or :func:`_play_chunk` for a tool env), then the summary.

Generation uses transformers ``generate`` (any machine); vLLM is used only when it is installed
and a CUDA GPU is present, and asking for it elsewhere is refused with the reason. Every scored
rollout is appended to ``rollouts.jsonl`` at once, so an interrupted eval resumes where it
stopped without re-scoring anything; ``summary.json`` holds accuracy, unbiased pass@k, mean
reward per verifier component, verdict-reason counts, and warnings when the completions echo
the prompt or every task's samples are identical (:mod:`rlvr_gym.trainers.sample_checks`).

A tool env (:class:`~rlvr_gym.envs.MultiTurnEnv`) is evaluated through its tool loop: each of the
``n`` samples of a task is an episode played with ``env.step`` — the model's messages generated
from the conversation so far with the tools' schemas in the chat template, tool calls parsed from
its output and answered by the env — until a final answer or the turn limit. Its rollout row holds
every message after the prompt (tool calls, tool replies, final answer) and each turn's record.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import gymnasium

from rlvr_gym import envs
from rlvr_gym.backends.console import announce
from rlvr_gym.backends.rollouts import Rollout, RolloutLog, episode_turns
from rlvr_gym.backends.run_layout import EVAL_SETTINGS_FILE, ROLLOUTS_FILE, SUMMARY_FILE
from rlvr_gym.backends.scoring import Scorer, make_scorer, scored_by
from rlvr_gym.envs import Env, MultiTurnEnv
from rlvr_gym.envs.config import settings_of
from rlvr_gym.envs.env import Observation, unwrap
from rlvr_gym.error import InvalidArgumentError, InvalidTypeError, NotAvailableError, RunFailedError
from rlvr_gym.trainers import run_dir
from rlvr_gym.trainers.eval_config import EvalConfig
from rlvr_gym.trainers.model_ref import check_model_reference
from rlvr_gym.trainers.passk import mean_pass_at_k
from rlvr_gym.trainers.sample_checks import sample_warnings
from rlvr_gym.verifiers import Task

ENGINES = ("auto", "transformers", "vllm")


class Sampler(Protocol):
    """Draws ``n`` completions for one prompt; the same ``seed`` gives the same completions.
    ``tools`` (a tool env's schemas) go to the chat template; a completion may then be an
    assistant message with ``tool_calls`` rather than text."""

    engine: str

    def sample(
        self, prompt: Observation, n: int, seed: int, *, tools: list[dict[str, Any]] | None = None
    ) -> list[Any]: ...


@dataclass
class EvalResult:
    """What an eval left behind: its folder, the summary dict and every rollout row."""

    output_dir: Path
    summary: dict[str, Any]
    rollouts: list[dict[str, Any]]


def vllm_available() -> tuple[bool, str]:
    """vLLM generates only with the package installed and a CUDA GPU present."""
    if importlib.util.find_spec("vllm") is None:
        return False, "vllm is not installed (pip install 'rlvr-gym[vllm]')"
    import torch

    if not torch.cuda.is_available():
        return False, "vLLM generation needs a CUDA GPU and none is visible"
    return True, "vLLM on CUDA"


def prompt_text(tokenizer: Any, prompt: Observation, tools: list[dict[str, Any]] | None = None) -> str:
    """Chat messages through the model's chat template (with the generation prompt and the
    tools' schemas, if any); text as is."""
    if isinstance(prompt, str):
        return prompt
    return tokenizer.apply_chat_template(prompt, tools=tools, tokenize=False, add_generation_prompt=True)


class TransformersSampler:
    """Sampling with ``model.generate``: n return sequences per prompt, seeded per prompt."""

    engine = "transformers"

    def __init__(self, model: str | Path, *, max_new_tokens: int, temperature: float) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        self.tokenizer = AutoTokenizer.from_pretrained(str(model))
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(str(model), dtype=dtype).to(self.device).eval()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature

    def sample(
        self, prompt: Observation, n: int, seed: int, *, tools: list[dict[str, Any]] | None = None
    ) -> list[str]:
        torch = self.torch
        encoded = self.tokenizer(
            prompt_text(self.tokenizer, prompt, tools), return_tensors="pt", add_special_tokens=False
        ).to(self.device)
        torch.manual_seed(seed)
        sampling = {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {}
        with torch.no_grad():
            out = self.model.generate(
                **encoded,
                max_new_tokens=self.max_new_tokens,
                num_return_sequences=n,
                pad_token_id=self.tokenizer.pad_token_id,
                do_sample=bool(sampling),
                **{k: v for k, v in sampling.items() if k != "do_sample"},
            )
        new = out[:, encoded["input_ids"].shape[1] :]
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)


class VLLMSampler:
    """Sampling with vLLM's offline ``LLM.generate`` (CUDA only; see :func:`vllm_available`)."""

    engine = "vllm"

    def __init__(self, model: str | Path, *, max_new_tokens: int, temperature: float) -> None:
        ok, why = vllm_available()
        if not ok:
            raise NotAvailableError(f"cannot evaluate with vLLM here: {why}")
        from vllm import LLM

        self.llm = LLM(model=str(model))
        self.tokenizer = self.llm.get_tokenizer()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature

    def sample(
        self, prompt: Observation, n: int, seed: int, *, tools: list[dict[str, Any]] | None = None
    ) -> list[str]:
        from vllm import SamplingParams

        params = SamplingParams(n=n, temperature=self.temperature, max_tokens=self.max_new_tokens, seed=seed)
        (result,) = self.llm.generate([prompt_text(self.tokenizer, prompt, tools)], params, use_tqdm=False)
        return [choice.text for choice in result.outputs]


def make_sampler(
    model: str | Path, engine: str = "auto", *, max_new_tokens: int, temperature: float
) -> Sampler:
    """``auto``: vLLM where it can run, else transformers. ``vllm`` elsewhere is refused."""
    if engine not in ENGINES:
        raise InvalidArgumentError(f"unknown engine {engine!r}; choose from {list(ENGINES)}")
    if engine == "vllm" or (engine == "auto" and vllm_available()[0]):
        return VLLMSampler(model, max_new_tokens=max_new_tokens, temperature=temperature)
    return TransformersSampler(model, max_new_tokens=max_new_tokens, temperature=temperature)


def task_seed(seed: int, split: str, index: int) -> int:
    """A per-task seed, so a resumed eval draws the same completions the first run would have."""
    digest = hashlib.sha256(f"{seed}:{split}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def play_episodes(
    env: MultiTurnEnv, split: str, index: int, samples: Sequence[int], sampler: Sampler, seed: int
) -> list[Rollout]:
    """Play the ``samples`` episodes of task ``index`` with the sampler as the policy.

    The first messages are drawn together from the shared prompt (``n`` at once, as for a
    single-step env); each later one from its own conversation with a seed derived from the
    task's, the sample and the turn, so a resumed eval replays the same episodes."""
    tools = env.tool_schemas()
    episodes = [env.spawn() for _ in samples]
    prompt: Observation = []
    for episode in episodes:
        prompt, _ = episode.reset(options={"index": index, "split": split})
    conversations = [list(prompt) for _ in samples]
    first = sampler.sample(prompt, max(samples) + 1, seed, tools=tools) if samples else []
    for turn in range(max((e.max_turns for e in episodes), default=0)):
        for position, (sample, episode) in enumerate(zip(samples, episodes, strict=True)):
            if episode.done:
                continue
            if turn == 0:
                message = first[sample]
            else:
                (message,) = sampler.sample(
                    conversations[position], 1, task_seed(seed, f"{sample}/{turn}", index), tools=tools
                )
            conversations[position], *_ = episode.step(message)
    rollouts = []
    for position, (sample, episode) in enumerate(zip(samples, episodes, strict=True)):
        verdict = episode.finish()
        rollouts.append(
            Rollout(
                split=split,
                index=index,
                sample=sample,
                prompt=prompt,
                completion=conversations[position][len(prompt) :],
                verdict=verdict.to_dict(),
                turns=episode_turns(episode),
            )
        )
    return rollouts


def tool_summary(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Tool calls and tool errors per episode, turns per episode and the share of episodes that
    ran out of turns, from tool-env rollout rows (``{}`` for single-step rows)."""
    episodes = [row["turns"] for row in rows if isinstance(row.get("turns"), list)]
    if not episodes:
        return {}
    calls = [record for turns in episodes for turn in turns for record in turn.get("tool_calls", [])]
    truncated = sum(bool(turns and turns[-1].get("out_of_turns")) for turns in episodes)
    return {
        "tools/calls_per_episode": len(calls) / len(episodes),
        "tools/errors_per_episode": sum(not r.get("ok", True) for r in calls) / len(episodes),
        "episode/turns": sum(len(t) for t in episodes) / len(episodes),
        "episode/truncated": truncated / len(episodes),
    }


def summarise(rows: Sequence[dict[str, Any]], n: int, ks: Sequence[int]) -> dict[str, Any]:
    """Accuracy, pass@k, mean reward (total and per component) and reason counts of ``rows``."""
    if not rows:
        raise InvalidArgumentError("no rollouts to summarise")
    per_task: dict[tuple[str, int], list[bool]] = {}
    for row in rows:
        per_task.setdefault((row["split"], row["index"]), []).append(bool(row["verdict"]["passed"]))
    complete = [(len(p), sum(p)) for p in per_task.values() if len(p) == n]
    scores = [row["verdict"]["score"] for row in rows]
    component_scores: dict[str, list[float]] = {}
    component_reasons: dict[str, Counter[str]] = {}
    for row in rows:
        details = row["verdict"].get("details") or {}
        for name, score in (details.get("scores") or {}).items():
            component_scores.setdefault(name, []).append(float(score))
        for name, reason in (details.get("reasons") or {}).items():
            component_reasons.setdefault(name, Counter())[reason] += 1
    summary: dict[str, Any] = {
        "tasks": len(per_task),
        "rollouts": len(rows),
        "accuracy": sum(row["verdict"]["passed"] for row in rows) / len(rows),
        "pass@k": {f"pass@{k}": mean_pass_at_k(complete, k) for k in ks} if complete else {},
        "reward/mean": sum(scores) / len(scores),
        "reasons": dict(Counter(row["verdict"]["reason"] for row in rows).most_common()),
        **tool_summary(rows),
    }
    for name, values in sorted(component_scores.items()):
        summary[f"reward/{name}/mean"] = sum(values) / len(values)
    if component_reasons:
        summary["component_reasons"] = {
            n: dict(c.most_common()) for n, c in sorted(component_reasons.items())
        }
    return summary


def _check_settings(output_dir: Path, settings: dict[str, Any], *, write: bool) -> None:
    """A resumed eval must continue the same eval: refuse a folder made with other settings.

    The settings are written (``write``) only after the model has loaded, so a failed start
    (a mistyped model path) leaves nothing that refuses the corrected retry.
    """
    path = output_dir / EVAL_SETTINGS_FILE
    if path.is_file():
        before = json.loads(path.read_text())
        changed = sorted(k for k in settings if before.get(k) != settings[k])
        if changed:
            raise InvalidArgumentError(
                f"{output_dir} holds an eval with other settings ({', '.join(changed)} differ); "
                "use another output dir or fresh=True (--fresh)"
            )
    elif write:
        path.write_text(json.dumps(settings, indent=2) + "\n")


def evaluate(
    env: Env | gymnasium.Env | str | None,
    model: str | Path,
    config: EvalConfig | None = None,
    *,
    sampler: Sampler | None = None,
    **settings: Any,
) -> EvalResult:
    """Evaluate ``model`` on the first ``limit`` tasks of ``split``: ``n`` samples per task.

    ``config`` is an :class:`EvalConfig`; ``settings`` are its fields given by name on top
    (``evaluate("arith", model, n=4, k=[1, 4])``). Resumes from ``output_dir/rollouts.jsonl``
    unless ``fresh``; rollouts already there are neither regenerated nor re-scored. Completions
    are scored ``batch_rollouts`` at a time through ``env.verify_batch`` (a code env runs them on
    its sandbox pool in parallel), on this host (``scoring="local"``) or on Ray actors across a
    cluster (``"ray"``, at ``ray_address``); the scorer is set up before the model loads, so an
    unreachable cluster costs no load. Returns the summary (also written to ``summary.json``).

    ``model`` may be a training run's folder (its ``final/`` is evaluated) or a model inside one;
    then an ``env`` given by id (or ``None``) means the run's recorded env id, version and
    settings (see :func:`rlvr_gym.trainers.run_dir.eval_env`). ``sampler`` replaces the local
    engines, e.g. :class:`rlvr_gym.trainers.openai_engine.OpenAISampler` for a remote server.
    """
    config = EvalConfig.of(config, **settings)
    if sampler is None:
        if config.engine == "openai":
            raise InvalidArgumentError(
                "engine 'openai' needs its sampler: evaluate(..., sampler=OpenAISampler(base_url, model))"
            )
        model = run_dir.model_of_run(model)
        check_model_reference(model)
    env_obj = _env_to_score(env, model, config)
    split = config.split_of(env_obj.splits)
    tasks = list(env_obj.tasks(split))[: config.limit]
    out = _output_dir(config, model, env_obj)
    recorded = _settings(env_obj, model, split, config)
    _check_settings(out, recorded, write=False)
    session = _Session()
    with RolloutLog(out / ROLLOUTS_FILE) as log, _scorer(env_obj, config) as scorer:
        todo = [
            (i, [s for s in range(config.n) if (None, split, i, s) not in log]) for i in range(len(tasks))
        ]
        todo = [(i, samples) for i, samples in todo if samples]
        session.resumed = sum(1 for _, s, i, _ in log.rows if s == split and i < len(tasks))
        if todo and sampler is None:
            t0 = time.perf_counter()
            sampler = make_sampler(
                model, config.engine, max_new_tokens=config.max_new_tokens, temperature=config.temperature
            )
            session.load_s = time.perf_counter() - t0
        _check_settings(out, recorded, write=True)  # only once the model loaded: a typo blocks nothing
        _sample_and_score(env_obj, tasks, split, todo, sampler, scored_by(scorer), log, config, session)
        rows = [log.rows[(None, split, i, s)] for i in range(len(tasks)) for s in range(config.n)]
        report = getattr(scorer, "report", None)  # Ray's: nodes, actors, losses and re-runs
        scoring_report = report() if callable(report) else {"scorer": config.scoring}
    summary = _summary(env_obj, tasks, rows, recorded, sampler, config, session.as_dict(scoring_report))
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    return EvalResult(out, summary, rows)


@dataclass
class _Session:
    """What this call did (as against what it resumed), for the summary's ``this_session``."""

    scored: int = 0
    resumed: int = 0
    load_s: float = 0.0
    generate_s: float = 0.0
    verify_s: float = 0.0
    wall_s: float = 0.0
    """Sampling and scoring, not model loading: what the throughput is over."""

    def as_dict(self, scoring: dict[str, Any]) -> dict[str, Any]:
        wall = self.wall_s
        return {
            "rollouts_scored": self.scored,
            "rollouts_resumed": self.resumed,
            "load_s": round(self.load_s, 3),
            "wall_s": round(wall, 3),
            "generate_s": round(self.generate_s, 3),
            "verify_s": round(self.verify_s, 3),
            "rollouts_per_s": round(self.scored / wall, 2) if self.scored and wall > 0 else None,
            "scoring": scoring,
        }


def _env_to_score(
    env: Env | gymnasium.Env | str | None, model: str | Path, config: EvalConfig
) -> Env:
    """The env object: as given (or inside Gymnasium's wrappers), else made from its id, or from
    the run's record for a run's model."""
    env_obj = unwrap(env)
    if env_obj is None:
        if env is not None and not isinstance(env, str):
            raise InvalidTypeError(f"env must be an rlvr_gym env, an env id or None, got {type(env).__name__}")
        chosen = run_dir.eval_env(model, env, {})
        if chosen.note:
            announce(chosen.note)
        env_obj = envs.make(chosen.env_id, **chosen.env_kwargs)
    if isinstance(env_obj, MultiTurnEnv) and config.scoring != "local":
        raise InvalidArgumentError(
            f"{env_obj.id} is a tool env: its episodes are scored as they are played (scoring='local')"
        )
    return env_obj


def _output_dir(config: EvalConfig, model: str | Path, env: Env) -> Path:
    """The eval's folder, made; emptied of an earlier eval's files with ``fresh``."""
    out = Path(
        config.output_dir if config.output_dir is not None else run_dir.default_eval_dir(model, env.id)
    )
    out.mkdir(parents=True, exist_ok=True)
    if config.fresh:
        for name in (ROLLOUTS_FILE, SUMMARY_FILE, EVAL_SETTINGS_FILE):
            (out / name).unlink(missing_ok=True)
    return out


def _settings(env: Env, model: str | Path, split: str, config: EvalConfig) -> dict[str, Any]:
    """What makes two evals the same eval: a resumed one must match it (``eval_settings.json``)."""
    return {
        "env": env.id,
        "env_kwargs": settings_of(env),
        "model": str(model),
        "split": split,
        "n": config.n,
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "seed": config.seed,
    }


def _sample_and_score(
    env: Env,
    tasks: Sequence[Task],
    split: str,
    todo: list[tuple[int, list[int]]],
    sampler: Sampler | None,
    verify_batch: Callable[[Sequence[object], Sequence[Task]], list[Any]],
    log: RolloutLog,
    config: EvalConfig,
    session: _Session,
) -> None:
    """Sample the missing rollouts a chunk at a time, score each chunk in one batch, log them."""
    started = time.perf_counter()
    total = len(tasks) * config.n
    bar = _progress(total=total, initial=session.resumed, desc=f"eval {env.id}", enabled=config.progress)
    try:
        for chunk in _chunks(todo, config.batch_rollouts):
            if isinstance(env, MultiTurnEnv):  # each sample is an episode of the tool loop
                rollouts = _play_chunk(env, split, chunk, sampler, config.seed, session)
            else:
                rollouts = _score_chunk(env, tasks, split, chunk, sampler, verify_batch, config, session)
            for rollout in rollouts:
                log.append(dataclasses.replace(rollout, env=env.id))  # the exact version (gsm8k-v0)
            session.scored += len(rollouts)
            bar.update(len(rollouts))
    finally:
        bar.close()
        session.wall_s = time.perf_counter() - started


def _play_chunk(
    env: MultiTurnEnv,
    split: str,
    chunk: list[tuple[int, list[int]]],
    sampler: Any,
    seed: int,
    session: _Session,
) -> list[Rollout]:
    """A tool env's chunk: each sample an episode, scored as it is played."""
    rollouts: list[Rollout] = []
    for index, samples in chunk:
        t0 = time.perf_counter()
        rollouts += play_episodes(env, split, index, samples, sampler, task_seed(seed, split, index))
        session.generate_s += time.perf_counter() - t0
    return rollouts


def _score_chunk(
    env: Env,
    tasks: Sequence[Task],
    split: str,
    chunk: list[tuple[int, list[int]]],
    sampler: Any,
    verify_batch: Callable[[Sequence[object], Sequence[Task]], list[Any]],
    config: EvalConfig,
    session: _Session,
) -> list[Rollout]:
    """A single-step env's chunk: ``n`` completions per task drawn together, then one
    ``verify_batch`` for the whole chunk (code envs run it on their sandbox pool)."""
    pending: list[tuple[int, int, Observation, str]] = []
    for index, samples in chunk:
        prompt = env.prompt(tasks[index])
        t0 = time.perf_counter()
        completions = sampler.sample(prompt, config.n, task_seed(config.seed, split, index))
        session.generate_s += time.perf_counter() - t0
        if len(completions) != config.n:
            raise RunFailedError(f"sampler returned {len(completions)} completions, expected {config.n}")
        pending += [(index, sample, prompt, completions[sample]) for sample in samples]
    t0 = time.perf_counter()
    verdicts = verify_batch([c for *_, c in pending], [tasks[i] for i, *_ in pending])
    session.verify_s += time.perf_counter() - t0
    return [
        Rollout(
            split=split, index=index, sample=sample, prompt=prompt, completion=completion, verdict=v.to_dict()
        )
        for (index, sample, prompt, completion), v in zip(pending, verdicts, strict=True)
    ]


def _summary(
    env: Env,
    tasks: Sequence[Task],
    rows: Sequence[dict[str, Any]],
    recorded: dict[str, Any],
    sampler: Sampler | None,
    config: EvalConfig,
    this_session: dict[str, Any],
) -> dict[str, Any]:
    """``summary.json``: the settings, the figures over every rollout (resumed ones included),
    the benchmark's own figures, the sample checks and what this call did."""
    benchmark = env.benchmark_metrics([row["verdict"] for row in rows], [tasks[row["index"]] for row in rows])
    checks = sample_warnings(rows, config.n, config.temperature)
    for line in checks["warnings"]:
        announce(f"WARNING: {line}")
    return {
        **recorded,
        "engine": sampler.engine if sampler is not None else None,
        "k": config.ks,
        **summarise(rows, config.n, config.ks),
        **({"benchmark": benchmark} if benchmark else {}),
        **checks,
        "this_session": this_session,
    }


@contextlib.contextmanager
def _scorer(env: Env, config: EvalConfig) -> Iterator[Scorer]:
    scorer = make_scorer(env, config.scoring, ray_address=config.ray_address)
    try:
        yield scorer
    finally:
        scorer.close()


def _chunks(todo: list[tuple[int, list[int]]], size: int):
    """Consecutive groups of tasks holding at least ``size`` rollouts each (the last may hold fewer)."""
    chunk: list[tuple[int, list[int]]] = []
    count = 0
    for item in todo:
        chunk.append(item)
        count += len(item[1])
        if count >= size:
            yield chunk
            chunk, count = [], 0
    if chunk:
        yield chunk


def _progress(*, total: int, initial: int, desc: str, enabled: bool):
    """A tqdm bar on stderr (tqdm comes with transformers); a silent stand-in when disabled."""
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="rollout", disable=not enabled)
