"""``rlvr-gym report RUN_DIR``: PNG plots of a run's ``metrics.jsonl`` and an HTML page.

The page opens with the result (run, env and its settings, model, steps, accuracy and reward
from the first to the last fifth of the run, eval pass@k, the audit's verdict), then the curves
(EMA-smoothed, the raw steps faint behind; a reward component of weight 0 is named, not plotted),
the metrics averaged over the last fifth, the run config, the audit, every eval summary, and
rollouts sampled across the whole run. Every piece of model or task text is HTML-escaped: a
completion is untrusted input and must render as text, never as markup or script.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_gym.backends.metrics import plot_series, read_metrics, reward_keys
from rlvr_gym.backends.protocol import steps_done
from rlvr_gym.backends.rollouts import find_rollout_logs, read_rollouts
from rlvr_gym.backends.run_layout import (
    AUDIT_FILE,
    CONFIG_FILE,
    METRICS_FILE,
    PLOTS_DIR,
    REPORT_FILE,
    SUMMARY_FILE,
    TINY_MODEL_DIR,
)
from rlvr_gym.error import Error, InvalidArgumentError, MissingPathError


@dataclass
class Report:
    """The page and the plots written; ``missing`` names plots whose metrics were never logged."""

    page: Path
    plots: dict[str, Path] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


TOOL_METRICS = ("tools/calls_per_episode", "tools/errors_per_episode", "episode/turns", "episode/truncated")
"""What a tool env's training and eval log about its episodes (``backends.tool_rewards``)."""


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def component_weights(config: dict[str, Any] | None) -> dict[str, float]:
    """The rubric weights of the env the run trained, rebuilt from its ``config.json``; ``{}``
    when the env cannot be made here (an env defined in code, a plugin not installed)."""
    if not config or ":" in str(config.get("env_id", ":")):
        return {}
    from rlvr_gym import envs

    try:
        env = envs.make(str(config["env_id"]), **dict(config.get("env_kwargs") or {}))
    except (Error, TypeError, ValueError):
        return {}
    return {name: float(w) for name, w in env.rubric.normalized_weights.items()}


def make_plots(
    run_dir: str | Path, weights: dict[str, float] | None = None
) -> tuple[dict[str, Path], list[str]]:
    """One PNG per view of the run: reward (total and per verifier), accuracy, length, KL/entropy.

    Curves are EMA-smoothed over the raw steps; a component whose rubric weight is 0 (in
    ``weights``) is left out of the reward plot: it is logged but adds nothing to the reward.
    """
    run_dir = Path(run_dir)
    rows = read_metrics(run_dir)
    if not rows:
        raise MissingPathError(f"no metrics in {run_dir / METRICS_FILE}: is {run_dir} a training run folder?")
    weights = weights or {}
    out = run_dir / PLOTS_DIR
    out.mkdir(exist_ok=True)
    components = {
        k.removeprefix("reward/").removesuffix("/mean"): k for k in reward_keys(rows) if k != "reward/mean"
    }
    views: dict[str, tuple[dict[str, str], str, tuple[float, float] | None]] = {
        "reward": (
            {"total": "reward/mean"}
            | {name: key for name, key in components.items() if weights.get(name, 1.0) != 0},
            "reward (total and per verifier)",
            (-0.05, 1.05),
        ),
        "accuracy": ({"accuracy": "accuracy"}, "fraction passed", (-0.05, 1.05)),
        "completion_length": ({"completion length": "completion_length"}, "tokens", None),
        "kl_entropy": ({"KL": "kl", "entropy": "entropy"}, "nats", None),
    }
    if any(TOOL_METRICS[0] in row for row in rows):  # a tool env's episodes
        views["tools"] = (
            {key.replace("_", " "): key for key in TOOL_METRICS},
            "per episode (truncated: share)",
            None,
        )
    plots: dict[str, Path] = {}
    missing: list[str] = []
    for name, (series, ylabel, ylim) in views.items():
        path = plot_series(
            rows,
            series,
            out / f"{name}.png",
            title=f"{name.replace('_', ' ')}: {run_dir.name}",
            ylabel=ylabel,
            ylim=ylim,
            smooth=True,
        )
        if path is None:
            missing.append(name)
        else:
            plots[name] = path
    return plots, missing


def _text(value: Any) -> str:
    """Model/task text as escaped HTML; chat prompts become ``role: content`` lines."""
    if isinstance(value, list):  # chat messages; a tool episode's calls shown as JSON
        value = "\n".join(
            f"{m.get('role', '?')}: {m.get('content') or ''}"
            + "".join(f" [tool call] {json.dumps(c, default=str)}" for c in m.get("tool_calls") or [])
            for m in value
            if isinstance(m, dict)
        )
    return html.escape(str(value), quote=True)


def _system_prompt(prompt: Any) -> str | None:
    """The system message of a chat prompt (``None`` for a text prompt or none)."""
    if isinstance(prompt, list):
        for message in prompt:
            if isinstance(message, dict) and message.get("role") == "system":
                return str(message.get("content", ""))
    return None


def _without_system(prompt: Any) -> Any:
    """A chat prompt without its system message (shown once above the samples instead)."""
    if isinstance(prompt, list):
        return [m for m in prompt if not (isinstance(m, dict) and m.get("role") == "system")]
    return prompt


def _pass_and_fail(rows: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """Up to ``count`` of ``rows``, half passing and half not where both exist."""
    good = [r for r in rows if r["verdict"]["passed"]]
    bad = [r for r in rows if not r["verdict"]["passed"]]
    take_good = min(len(good), count // 2 if bad else count)
    return good[:take_good] + bad[: count - take_good]


def _spread(rows: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """Training rollouts from ``count`` steps spread evenly from the first logged step to the
    last (one a step, passing where the step has one on every other pick), so the page shows
    how the completions changed, not only the first steps."""
    by_step: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_step.setdefault(int(row["step"]), []).append(row)
    steps = sorted(by_step)
    if len(steps) <= count:
        picks = steps
    else:
        picks = (
            sorted({steps[round(i * (len(steps) - 1) / (count - 1))] for i in range(count)})
            if count > 1
            else [steps[-1]]
        )
    chosen = []
    for i, step in enumerate(picks):
        group = by_step[step]
        want_pass = i % 2 == 1
        chosen.append(next((r for r in group if bool(r["verdict"]["passed"]) == want_pass), group[0]))
    return chosen


def sample_rollouts(run_dir: Path, count: int) -> list[tuple[Path, dict[str, Any]]]:
    """Up to ``count`` rollouts per log: a training log's spread over the run's steps, an eval's
    half passing and half not where both exist."""
    picked: list[tuple[Path, dict[str, Any]]] = []
    for log in find_rollout_logs(run_dir):
        rows = read_rollouts(log)
        if not rows or count == 0:
            continue
        chosen = _spread(rows, count) if all("step" in r for r in rows) else _pass_and_fail(rows, count)
        picked += [(log, r) for r in chosen]
    return picked


def _rollout_label(run_dir: Path, log: Path, row: dict[str, Any]) -> str:
    """``train step 40 #17.2`` for a training sample, ``eval #17.2`` (its folder) for an eval rollout."""
    where = f"train step {row['step']}" if "step" in row else str(log.parent.relative_to(run_dir))
    return _text(f"{where} #{row['index']}.{row['sample']}")


def _component_scores(verdict: dict[str, Any]) -> str:
    scores = (verdict.get("details") or {}).get("scores") or {}
    return _text(", ".join(f"{k} {v:.3g}" for k, v in scores.items() if isinstance(v, int | float)))


def model_name(run_dir: Path, config: dict[str, Any] | None) -> str:
    """What the run trained, in words: the model reference, or the tiny offline model (and its
    warm start) when ``model`` is ``None``."""
    if not config:
        return "unknown (no config.json)"
    if config.get("model"):
        return str(config["model"])
    warm = int(config.get("warm_start_steps") or 0)
    built = run_dir / TINY_MODEL_DIR
    where = f" ({built})" if built.is_dir() else ""
    return f"the tiny offline model{where}" + (f", after a {warm}-step supervised warm start" if warm else "")


def _run_config(run_dir: Path, config: dict[str, Any] | None) -> str:
    """The ``config.json`` a training run saved (every RunConfig field), as a table."""
    if config is None:
        return "<p>No config.json in this run folder.</p>"
    shown = {**config, "model": model_name(run_dir, config)}
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{_text(json.dumps(v) if isinstance(v, dict | list) else v)}</td></tr>"
        for k, v in shown.items()
    )
    return f"<table class='kv config'>{cells}</table>"


def fifths(rows: list[dict[str, Any]], key: str) -> tuple[float, float] | None:
    """Mean of ``key`` over the first and the last fifth of the logged steps (at least one step
    each): the run's change, steadier than any single noisy step."""
    values = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    if not values:
        return None
    fifth = max(1, len(values) // 5)
    return sum(values[:fifth]) / fifth, sum(values[-fifth:]) / fifth


def _metrics_table(rows: list[dict[str, Any]]) -> str:
    """Every numeric metric as the mean of the first and of the last fifth of the logged steps,
    grouped by what it measures (``reward/...``, ``completions/...``; the rest under "run")."""
    if not rows:
        return "<p>No metrics logged in this run.</p>"
    size = max(1, len(rows) // 5)
    first, last = rows[:size], rows[-size:]
    groups: dict[str, list[str]] = {}
    for key in dict.fromkeys(k for r in rows for k in r if k != "step"):
        groups.setdefault(key.split("/", 1)[0] if "/" in key else "run", []).append(key)
    cells = []
    for group, keys in sorted(groups.items(), key=lambda item: (item[0] != "run", item[0])):
        body = []
        for key in keys:
            means = [_mean(part, key) for part in (first, last)]
            if means[1] is None:
                continue
            shown = [f"{m:.4g}" if m is not None else "" for m in means]
            label = key.split("/", 1)[1] if "/" in key else key
            body.append(f"<tr><td>{html.escape(label)}</td><td>{shown[0]}</td><td>{shown[1]}</td></tr>")
        if body:
            cells.append(f"<tr><th colspan='3'>{html.escape(group)}</th></tr>" + "".join(body))
    span = f"steps {first[0].get('step')}–{first[-1].get('step')} and {last[0].get('step')}–{last[-1].get('step')}"
    return (
        f"<p>Mean over the first and the last fifth of the run ({html.escape(span)}, {size} logged steps each).</p>"
        f"<table class='metrics'><tr><th>metric</th><th>first fifth</th><th>last fifth</th></tr>{''.join(cells)}</table>"
    )


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [
        r[key] for r in rows if isinstance(r.get(key), int | float) and not isinstance(r.get(key), bool)
    ]
    return sum(values) / len(values) if values else None


def _evals(run_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(run_dir.rglob(SUMMARY_FILE)):
        summary = _read_json(path)
        if summary is not None:
            found.append((path, summary))
    return found


def _eval_summaries(run_dir: Path) -> str:
    parts = []
    for path, summary in _evals(run_dir):
        keys = [
            "env",
            "env_kwargs",
            "model",
            "engine",
            "split",
            "n",
            "tasks",
            "accuracy",
            "pass@k",
            "reward/mean",
            "reasons",
            *TOOL_METRICS,
        ]
        cells = "".join(
            f"<tr><th>{html.escape('env settings' if k == 'env_kwargs' else k)}</th>"
            f"<td>{_text(json.dumps(summary[k], sort_keys=True) if isinstance(summary[k], dict) else summary[k])}</td></tr>"
            for k in keys
            if k in summary
        )
        parts.append(f"<h3>{_text(path.parent.relative_to(run_dir))}</h3><table class='kv'>{cells}</table>")
    return (
        "".join(parts)
        or "<p>No eval under this run (run <code>rlvr-gym eval --output-dir RUN_DIR/eval</code>).</p>"
    )


def run_audit(run_dir: Path, config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The run's ``audit.json``, or ``None`` when its config says the audit was skipped (a file
    left by an earlier, refused start is not this run's audit)."""
    if config is not None and config.get("audit") is False:
        return None
    return _read_json(run_dir / AUDIT_FILE)


def audit_verdict(audit: dict[str, Any] | None, config: dict[str, Any] | None = None) -> str:
    """One sentence, every slot filled: what was audited, on what, and the verdict."""
    if audit is None:
        if config is not None and config.get("audit") is False:
            return "skipped: trained with --no-audit"
        return "not run (trained with --no-audit, or before audits existed)"
    env = audit.get("env") or "the env"
    tasks = audit.get("task_indices") or []
    split = audit.get("split") or "its"
    families = len(audit.get("families") or {})
    on = (
        f"{len(tasks)} {split} task{'s' if len(tasks) != 1 else ''} (indices {', '.join(map(str, tasks))})"
        if tasks
        else f"{split} tasks"
    )
    what = f"{families} exploit famil{'ies' if families != 1 else 'y'} against {env} on {on}"
    skipped = (config or {}).get("audit_skip") or []
    if skipped:
        what += f" ({', '.join(skipped)} skipped)"
    if audit.get("ok"):
        threshold = audit.get("threshold")
        bound = f" or earned more than {threshold:g}" if isinstance(threshold, int | float) else ""
        warned = "; ".join(audit.get("warnings") or [])
        return f"passed: {what}; no exploit passed{bound}" + (f"; warning: {warned}" if warned else "")
    failures = "; ".join(audit.get("failures") or []) or "see the table below"
    return f"FAILED: {what}; {failures}"


def _audit_section(run_dir: Path, config: dict[str, Any] | None = None) -> str:
    """The reward-hack audit ``train`` ran first (``audit.json``): one row per family."""
    audit = run_audit(run_dir, config)
    if audit is None:
        return f"<p>No audit in this run: {_text(audit_verdict(None, config))}.</p>"
    rows = "".join(
        f"<tr><td>{_text(name)}</td><td>{_text(r['kind'])}</td><td>{r['count']}</td>"
        f"<td>{r['pass_rate']:.2f}</td><td>{r['mean_reward']:.3f}</td><td>{r['max_reward']:.3f}</td>"
        f"<td>{'ok' if r['ok'] else 'FAIL' if r.get('blocks', True) else 'WARN'}</td><td><pre>{_text(r['example'].get('name', ''))}: "
        f"{_text(r['example'].get('completion', ''))}</pre></td></tr>"
        for name, r in audit.get("families", {}).items()
    )
    return (
        f"<p class='audit'>Audit {_text(audit_verdict(audit, config))}.</p><table class='audit'><tr><th>family</th><th>kind</th><th>n</th>"
        f"<th>pass rate</th><th>mean reward</th><th>max reward</th><th>verdict</th><th>example</th></tr>{rows}</table>"
    )


def headline(run_dir: Path, rows: list[dict[str, Any]], config: dict[str, Any] | None) -> dict[str, str]:
    """The result in a few lines: run, env and settings, model, steps, first → last fifth of
    accuracy and reward, every eval's pass@k, and the audit's verdict."""
    lines: dict[str, str] = {"run": str(run_dir)}
    if config:
        settings = json.dumps(config.get("env_kwargs") or {}, sort_keys=True)
        lines["env"] = f"{config.get('env_id')} with settings {settings}"
    lines["model"] = model_name(run_dir, config)
    planned = f" of {config['max_steps']}" if config and config.get("max_steps") else ""
    steps = steps_done(run_dir)  # the finished run's own count; a run cut short: its last logged step
    lines["steps"] = (
        f"{steps}{planned} ({len(rows)} logged)"
        if steps is not None
        else f"{rows[-1].get('step')}{planned} ({len(rows)} logged; the run did not finish)"
    )
    for key, label in (("accuracy", "accuracy"), ("reward/mean", "reward")):
        change = fifths(rows, key)
        if change is not None:
            lines[label] = (
                f"{change[0]:.3f} → {change[1]:.3f} (mean of the first → the last fifth of the steps)"
            )
    for path, summary in _evals(run_dir):
        passk = ", ".join(f"{k} {v:.3f}" for k, v in (summary.get("pass@k") or {}).items())
        accuracy = summary.get("accuracy")
        acc = f"accuracy {accuracy:.3f}" if isinstance(accuracy, int | float) else ""
        where = path.parent.relative_to(run_dir).as_posix() or "."
        lines[f"eval {where}"] = ", ".join(x for x in (passk, acc) if x) + (
            f" on {summary.get('split')} ({summary.get('tasks')} tasks × {summary.get('n')})"
        )
    lines["audit"] = audit_verdict(run_audit(run_dir, config), config)
    return lines


def render_page(
    run_dir: Path,
    plots: dict[str, Path],
    missing: Sequence[str],
    samples: list[tuple[Path, dict[str, Any]]],
    *,
    config: dict[str, Any] | None = None,
    weights: dict[str, float] | None = None,
) -> str:
    rows = read_metrics(run_dir)
    top = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{_text(v)}</td></tr>"
        for k, v in headline(run_dir, rows, config).items()
    )
    images = "".join(
        f"<figure><img src='{html.escape(p.relative_to(run_dir).as_posix())}' alt='{html.escape(name)} plot'>"
        f"<figcaption>{html.escape(name.replace('_', ' '))}</figcaption></figure>"
        for name, p in plots.items()
    )
    notes = "".join(f"<li>{html.escape(m.replace('_', ' '))}: not logged in this run</li>" for m in missing)
    notes += "".join(
        f"<li class='weight0'>{html.escape(name)}: weight 0 in the rubric — logged, not part of the reward, not plotted</li>"
        for name, w in (weights or {}).items()
        if w == 0
    )
    systems = [text for text in dict.fromkeys(_system_prompt(r["prompt"]) for _, r in samples) if text]
    shared = (
        f"<p>System prompt of every sample below (not repeated in the rows):</p><pre class='system'>{_text(systems[0])}</pre>"
        if len(systems) == 1
        else ""
    )
    sample_rows = "".join(
        "<tr>"
        f"<td>{_rollout_label(run_dir, log, r)}</td>"
        f"<td><pre>{_text(_without_system(r['prompt']) if shared else r['prompt'])}</pre></td>"
        f"<td><pre class='completion'>{_text(r['completion'])}</pre></td>"
        f"<td>{_text(r['verdict']['reason'])}</td><td>{r['verdict']['score']:.3f}</td>"
        f"<td>{_component_scores(r['verdict'])}</td>"
        "</tr>"
        for log, r in samples
    )
    samples_html = shared + (
        "<table class='rollouts'><tr><th>rollout</th><th>prompt</th><th>completion</th><th>reason</th><th>score</th>"
        "<th>per component</th></tr>"
        f"{sample_rows}</table>"
        if samples
        else "<p>No rollout logs under this run.</p>"
    )
    title = html.escape(f"rlvr-gym report: {run_dir.name}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
figure {{ display: inline-block; margin: 0 1em 1em 0; }} img {{ width: 560px; border: 1px solid #ddd; }}
table {{ border-collapse: collapse; margin-bottom: 1em; }} th, td {{ border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; text-align: left; }}
table.headline {{ font-size: 1.1em; }} table.headline th {{ background: #f4f4f4; }}
pre {{ white-space: pre-wrap; max-width: 40em; margin: 0; }}
</style></head>
<body>
<h1>{title}</h1>
<table class="headline">{top}</table>
<h2>Curves</h2>
<p>Each curve is an exponential moving average; the raw per-step values are drawn faintly behind it.</p>
{images}
<ul class="missing">{notes}</ul>
<h2>Metrics at the end of the run</h2>
{_metrics_table(rows)}
<h2>Run config</h2>
{_run_config(run_dir, config)}
<h2>Reward-hack audit</h2>
{_audit_section(run_dir, config)}
<h2>Evaluations</h2>
{_eval_summaries(run_dir)}
<h2>Sample rollouts</h2>
{samples_html}
</body></html>
"""


def build_report(run_dir: str | Path, *, samples: int = 8) -> Report:
    """Write ``RUN_DIR/plots/*.png`` and ``RUN_DIR/report.html``; return their paths."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise MissingPathError(f"run folder {run_dir} does not exist")
    if samples < 0:
        raise InvalidArgumentError(f"samples must be >= 0, got {samples}")
    config = _read_json(run_dir / CONFIG_FILE)
    weights = component_weights(config)
    plots, missing = make_plots(run_dir, weights)
    page = run_dir / REPORT_FILE
    html_text = render_page(
        run_dir, plots, missing, sample_rollouts(run_dir, samples), config=config, weights=weights
    )
    page.write_text(html_text, encoding="utf-8")
    return Report(page, plots, missing)
