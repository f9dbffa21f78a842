"""``evaluate(env, model, n, k)``: sample completions, score them with the env, summarise.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol

from rlvr_gym import envs
from rlvr_gym.backends.config import about
from rlvr_gym.backends.console import announce
from rlvr_gym.backends.rollouts import ROLLOUTS_FILE, Rollout, RolloutLog, episode_turns
from rlvr_gym.backends.scoring import Scorer, check_scoring, make_scorer, scored_by
from rlvr_gym.envs import MultiTurnEnv, SingleTurnEnv
from rlvr_gym.envs.env import Observation
from rlvr_gym.error import InvalidArgument, NotAvailable, RunFailed
from rlvr_gym.trainers import run_dir
from rlvr_gym.trainers.model_ref import check_model_reference
from rlvr_gym.trainers.passk import mean_pass_at_k
from rlvr_gym.trainers.sample_checks import sample_warnings

SUMMARY_FILE = "summary.json"
SETTINGS_FILE = "eval_settings.json"
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
            raise NotAvailable(f"cannot evaluate with vLLM here: {why}")
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
        raise InvalidArgument(f"unknown engine {engine!r}; choose from {list(ENGINES)}")
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
        raise InvalidArgument("no rollouts to summarise")
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
    path = output_dir / SETTINGS_FILE
    if path.is_file():
        before = json.loads(path.read_text())
        changed = sorted(k for k in settings if before.get(k) != settings[k])
        if changed:
            raise InvalidArgument(
                f"{output_dir} holds an eval with other settings ({', '.join(changed)} differ); "
                "use another output dir or fresh=True (--fresh)"
            )
    elif write:
        path.write_text(json.dumps(settings, indent=2) + "\n")


def evaluate(
    env: SingleTurnEnv | str | None,
    model: str | Path,
    n: Annotated[int, about("samples per task")] = 4,
    k: Annotated[
        int | Sequence[int],
        about("pass@k to report: --k 1 4 or --k 1 --k 4", type=int, many=True, cli_default="1 and n"),
    ] = 1,
    *,
    split: Annotated[
        str, about("split to score", cli_default="test when the env has it, else its first")
    ] = "test",
    limit: Annotated[int | None, about("evaluate only the first N tasks", metavar="N")] = None,
    output_dir: Annotated[
        str | Path,
        about(
            "where rollouts and the summary go; an earlier eval there with the same settings is resumed",
            cli_default="RUN_DIR/eval-final for a run's model, else runs/eval-ENV-MODEL",
        ),
    ] = "runs/eval",
    engine: str = "auto",
    max_new_tokens: Annotated[int, about("tokens generated per sample at most")] = 256,
    temperature: Annotated[float, about("sampling temperature")] = 1.0,
    seed: Annotated[int, about("sampling seed (each task's seed is derived from it)")] = 0,
    fresh: Annotated[bool, about("discard an earlier eval in --output-dir")] = False,
    progress: Annotated[bool, about("a progress line on the console")] = True,
    sampler: Sampler | None = None,
    batch_rollouts: Annotated[int, about("completions scored per batch")] = 32,
    scoring: str = "local",
    ray_address: str | None = None,
) -> EvalResult:
    """Evaluate ``model`` on the first ``limit`` tasks of ``split``: ``n`` samples per task.

    Resumes from ``output_dir/rollouts.jsonl`` unless ``fresh``; rollouts already there are
    neither regenerated nor re-scored. Completions are scored ``batch_rollouts`` at a time
    through ``env.verify_batch`` (a code env runs them on its sandbox pool in parallel), on this
    host (``scoring="local"``) or on Ray actors across a cluster (``"ray"``, at ``ray_address``);
    the scorer is set up before the model loads, so an unreachable cluster costs no load.
    Returns the summary (also written to ``summary.json``).

    ``model`` may be a training run's folder (its ``final/`` is evaluated) or a model inside one;
    then an ``env`` given by id (or ``None``) means the run's recorded env id, version and
    settings (see :func:`rlvr_gym.trainers.run_dir.eval_env`). ``sampler`` replaces the local
    engines, e.g. :class:`rlvr_gym.trainers.openai_engine.OpenAISampler` for a remote server.
    """
    ks = [k] if isinstance(k, int) else list(k)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidArgument(f"n (samples per task) must be an integer >= 1, got {n!r}")
    for value in ks:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= n:
            raise InvalidArgument(f"k must be integers in [1, n={n}], got {value!r}")
    if limit is not None and limit < 1:
        raise InvalidArgument(f"limit must be >= 1, got {limit}")
    if max_new_tokens < 1 or temperature < 0:
        raise InvalidArgument(
            f"need max_new_tokens >= 1 and temperature >= 0, got {max_new_tokens}, {temperature}"
        )
    if temperature == 0 and n > 1:
        raise InvalidArgument(
            f"temperature 0 is greedy decoding: its n={n} samples per task would all be the same; "
            "use n=1 or a temperature > 0"
        )
    if isinstance(batch_rollouts, bool) or not isinstance(batch_rollouts, int) or batch_rollouts < 1:
        raise InvalidArgument(f"batch_rollouts must be an integer >= 1, got {batch_rollouts!r}")
    check_scoring(scoring, ray_address)
    if isinstance(env, MultiTurnEnv) and scoring != "local":
        raise InvalidArgument(f"{env.id} is a tool env: its episodes are scored as they are played (scoring='local')")
    if sampler is None:
        model = run_dir.model_of_run(model)
        check_model_reference(model)
    if isinstance(env, SingleTurnEnv):
        env_obj = env
    else:
        chosen = run_dir.eval_env(model, env, {})
        if chosen.note:
            announce(chosen.note)
        env_obj = envs.make(chosen.env_id, **chosen.env_kwargs)
    spec = getattr(env_obj, "spec", None)
    env_id = env_obj.id
    env_kwargs = json.loads(json.dumps(dict(spec.kwargs), default=repr)) if spec is not None else {}
    tasks = list(env_obj.tasks(split))[:limit]
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fresh:
        for name in (ROLLOUTS_FILE, SUMMARY_FILE, SETTINGS_FILE):
            (out / name).unlink(missing_ok=True)
    settings = {
        "env": env_id,
        "env_kwargs": env_kwargs,
        "model": str(model),
        "split": split,
        "n": n,
        "max_new_tokens": max_new_tokens,
        "temperature": temperature,
        "seed": seed,
    }
    _check_settings(out, settings, write=False)

    with RolloutLog(out / ROLLOUTS_FILE) as log, _scorer(env_obj, scoring, ray_address) as scorer:
        verify_batch = scored_by(scorer)
        todo = [(i, [s for s in range(n) if (None, split, i, s) not in log]) for i in range(len(tasks))]
        todo = [(i, samples) for i, samples in todo if samples]
        resumed = sum(1 for _, s, i, _ in log.rows if s == split and i < len(tasks))
        generated = 0
        gen_s = verify_s = 0.0
        load_s = 0.0
        if todo and sampler is None:
            t0 = time.perf_counter()
            sampler = make_sampler(model, engine, max_new_tokens=max_new_tokens, temperature=temperature)
            load_s = time.perf_counter() - t0
        _check_settings(out, settings, write=True)  # only once the model loaded: a typo blocks nothing
        started = time.perf_counter()  # throughput counts sampling and scoring, not model loading
        bar = _progress(total=len(tasks) * n, initial=resumed, desc=f"eval {env_id}", enabled=progress)
        try:
            for chunk in _chunks(todo, batch_rollouts):
                if isinstance(env_obj, MultiTurnEnv):  # each sample is an episode of the tool loop
                    for index, samples in chunk:
                        t0 = time.perf_counter()
                        played = play_episodes(env_obj, split, index, samples, sampler, task_seed(seed, split, index))
                        gen_s += time.perf_counter() - t0
                        for rollout in played:
                            log.append(dataclasses.replace(rollout, env=env_id))
                        generated += len(played)
                        bar.update(len(played))
                    continue
                pending: list[tuple[int, int, Observation, str]] = []
                for index, samples in chunk:
                    prompt = env_obj.prompt(tasks[index])
                    t0 = time.perf_counter()
                    completions = sampler.sample(prompt, n, task_seed(seed, split, index))
                    gen_s += time.perf_counter() - t0
                    if len(completions) != n:
                        raise RunFailed(f"sampler returned {len(completions)} completions, expected {n}")
                    pending += [(index, sample, prompt, completions[sample]) for sample in samples]
                # One verify_batch per chunk: code envs run the whole chunk on their sandbox pool.
                t0 = time.perf_counter()
                verdicts = verify_batch([c for *_, c in pending], [tasks[i] for i, *_ in pending])
                verify_s += time.perf_counter() - t0
                for (index, sample, prompt, completion), verdict in zip(pending, verdicts, strict=True):
                    log.append(
                        Rollout(
                            env=env_id,  # the exact version (gsm8k-v0), even when asked for "gsm8k"
                            split=split,
                            index=index,
                            sample=sample,
                            prompt=prompt,
                            completion=completion,
                            verdict=verdict.to_dict(),
                        )
                    )
                    generated += 1
                bar.update(len(pending))
        finally:
            bar.close()
        wall = time.perf_counter() - started
        rows = [log.rows[(None, split, i, s)] for i in range(len(tasks)) for s in range(n)]
        report = getattr(scorer, "report", None)  # Ray's: nodes, actors, losses and re-runs
        scoring_report = report() if callable(report) else {"backend": scoring}

    benchmark = env_obj.benchmark_metrics(
        [row["verdict"] for row in rows], [tasks[row["index"]] for row in rows]
    )
    checks = sample_warnings(rows, n, temperature)
    for line in checks["warnings"]:
        announce(f"WARNING: {line}")
    summary = {
        **settings,
        "engine": sampler.engine if sampler is not None else None,
        "k": ks,
        **summarise(rows, n, ks),
        **({"benchmark": benchmark} if benchmark else {}),
        **checks,
        "this_session": {
            "rollouts_scored": generated,
            "rollouts_resumed": resumed,
            "load_s": round(load_s, 3),
            "wall_s": round(wall, 3),
            "generate_s": round(gen_s, 3),
            "verify_s": round(verify_s, 3),
            "rollouts_per_s": round(generated / wall, 2) if generated and wall > 0 else None,
            "scoring": scoring_report,
        },
    }
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    return EvalResult(out, summary, rows)


@contextlib.contextmanager
def _scorer(env: SingleTurnEnv, scoring: str, ray_address: str | None) -> Iterator[Scorer]:
    scorer = make_scorer(env, scoring, ray_address=ray_address)
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
