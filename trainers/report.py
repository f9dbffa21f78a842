"""``rlvr-gym report RUN_DIR``: PNG plots of a run's ``metrics.jsonl`` and an HTML page.

The page shows the plots, the last logged metrics, any eval summaries under the run folder and
sample rollouts from their logs. Every piece of model or task text is HTML-escaped: a completion
is untrusted input and must render as text, never as markup or script.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_gym.backends.metrics import plot_series, read_metrics, reward_keys
from rlvr_gym.envs.audit import AUDIT_FILE
from rlvr_gym.error import InvalidArgument, MissingPath
from rlvr_gym.trainers.evaluate import SUMMARY_FILE
from rlvr_gym.trainers.rollouts import find_rollout_logs, read_rollouts

REPORT_FILE = "report.html"
PLOTS_DIR = "plots"


@dataclass
class Report:
    """The page and the plots written; ``missing`` names plots whose metrics were never logged."""

    page: Path
    plots: dict[str, Path] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def make_plots(run_dir: str | Path) -> tuple[dict[str, Path], list[str]]:
    """One PNG per view of the run: reward (total and per verifier), accuracy, length, KL/entropy."""
    run_dir = Path(run_dir)
    rows = read_metrics(run_dir)
    if not rows:
        raise MissingPath(f"no metrics in {run_dir / 'metrics.jsonl'}: is {run_dir} a training run folder?")
    out = run_dir / PLOTS_DIR
    out.mkdir(exist_ok=True)
    views: dict[str, tuple[dict[str, str], str, tuple[float, float] | None]] = {
        "reward": (
            {"total": "reward/mean"}
            | {
                k.removeprefix("reward/").removesuffix("/mean"): k
                for k in reward_keys(rows)
                if k != "reward/mean"
            },
            "reward (total and per verifier)",
            (-0.05, 1.05),
        ),
        "accuracy": ({"accuracy": "accuracy"}, "fraction passed", (-0.05, 1.05)),
        "completion_length": ({"completion length": "completion_length"}, "tokens", None),
        "kl_entropy": ({"KL": "kl", "entropy": "entropy"}, "nats", None),
    }
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
        )
        if path is None:
            missing.append(name)
        else:
            plots[name] = path
    return plots, missing


def _text(value: Any) -> str:
    """Model/task text as escaped HTML; chat prompts become ``role: content`` lines."""
    if isinstance(value, list):
        value = "\n".join(
            f"{m.get('role', '?')}: {m.get('content', '')}" for m in value if isinstance(m, dict)
        )
    return html.escape(str(value), quote=True)


def sample_rollouts(run_dir: Path, count: int) -> list[tuple[Path, dict[str, Any]]]:
    """Up to ``count`` rollouts per log, half passing and half not where both exist."""
    picked: list[tuple[Path, dict[str, Any]]] = []
    for log in find_rollout_logs(run_dir):
        rows = read_rollouts(log)
        good = [r for r in rows if r["verdict"]["passed"]]
        bad = [r for r in rows if not r["verdict"]["passed"]]
        take_good = min(len(good), count // 2 if bad else count)
        chosen = good[:take_good] + bad[: count - take_good]
        picked += [(log, r) for r in chosen]
    return picked


def _rollout_label(run_dir: Path, log: Path, row: dict[str, Any]) -> str:
    """``train step 40 #17.2`` for a training sample, ``eval #17.2`` (its folder) for an eval rollout."""
    where = f"train step {row['step']}" if "step" in row else str(log.parent.relative_to(run_dir))
    return _text(f"{where} #{row['index']}.{row['sample']}")


def _component_scores(verdict: dict[str, Any]) -> str:
    scores = (verdict.get("details") or {}).get("scores") or {}
    return _text(", ".join(f"{k} {v:.3g}" for k, v in scores.items() if isinstance(v, int | float)))


def _run_config(run_dir: Path) -> str:
    """The ``config.json`` a training run saved (every RunConfig field), as a table."""
    path = run_dir / "config.json"
    if not path.is_file():
        return "<p>No config.json in this run folder.</p>"
    config = json.loads(path.read_text())
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{_text(json.dumps(v) if isinstance(v, dict | list) else v)}</td></tr>"
        for k, v in config.items()
    )
    return f"<table class='kv config'>{cells}</table>"


def _metrics_table(rows: list[dict[str, Any]]) -> str:
    last = rows[-1]
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(f'{v:.4g}' if isinstance(v, float) else str(v))}</td></tr>"
        for k, v in last.items()
    )
    return f"<table class='kv'>{cells}</table>"


def _eval_summaries(run_dir: Path) -> str:
    parts = []
    for path in sorted(run_dir.rglob(SUMMARY_FILE)):
        summary = json.loads(path.read_text())
        keys = ["env", "model", "split", "n", "tasks", "accuracy", "pass@k", "reward/mean", "reasons"]
        cells = "".join(
            f"<tr><th>{html.escape(k)}</th><td>{_text(json.dumps(summary[k]) if isinstance(summary[k], dict) else summary[k])}</td></tr>"
            for k in keys
            if k in summary
        )
        parts.append(f"<h3>{_text(path.parent.relative_to(run_dir))}</h3><table class='kv'>{cells}</table>")
    return (
        "".join(parts)
        or "<p>No eval under this run (run <code>rlvr-gym eval --output-dir RUN_DIR/eval</code>).</p>"
    )


def _audit_section(run_dir: Path) -> str:
    """The reward-hack audit ``train`` ran first (``audit.json``): one row per family."""
    path = run_dir / AUDIT_FILE
    if not path.is_file():
        return "<p>No audit in this run (trained with <code>--no-audit</code>, or before audits existed).</p>"
    audit = json.loads(path.read_text(encoding="utf-8"))
    rows = "".join(
        f"<tr><td>{_text(name)}</td><td>{_text(r['kind'])}</td><td>{r['count']}</td>"
        f"<td>{r['pass_rate']:.2f}</td><td>{r['mean_reward']:.3f}</td><td>{r['max_reward']:.3f}</td>"
        f"<td>{'ok' if r['ok'] else 'FAIL'}</td><td><pre>{_text(r['example'].get('name', ''))}: "
        f"{_text(r['example'].get('completion', ''))}</pre></td></tr>"
        for name, r in audit.get("families", {}).items()
    )
    verdict = "passed" if audit.get("ok") else "FAILED: " + "; ".join(audit.get("failures", []))
    return (
        f"<p class='audit'>Audit of {_text(audit.get('env'))} on tasks {_text(audit.get('task_indices'))}: "
        f"{_text(verdict)}</p><table class='audit'><tr><th>family</th><th>kind</th><th>n</th>"
        f"<th>pass rate</th><th>mean reward</th><th>max reward</th><th>verdict</th><th>example</th></tr>{rows}</table>"
    )


def render_page(
    run_dir: Path, plots: dict[str, Path], missing: Sequence[str], samples: list[tuple[Path, dict[str, Any]]]
) -> str:
    rows = read_metrics(run_dir)
    images = "".join(
        f"<figure><img src='{html.escape(p.relative_to(run_dir).as_posix())}' alt='{html.escape(name)} plot'>"
        f"<figcaption>{html.escape(name.replace('_', ' '))}</figcaption></figure>"
        for name, p in plots.items()
    )
    notes = "".join(f"<li>{html.escape(m.replace('_', ' '))}: not logged in this run</li>" for m in missing)
    sample_rows = "".join(
        "<tr>"
        f"<td>{_rollout_label(run_dir, log, r)}</td>"
        f"<td><pre>{_text(r['prompt'])}</pre></td>"
        f"<td><pre class='completion'>{_text(r['completion'])}</pre></td>"
        f"<td>{_text(r['verdict']['reason'])}</td><td>{r['verdict']['score']:.3f}</td>"
        f"<td>{_component_scores(r['verdict'])}</td>"
        "</tr>"
        for log, r in samples
    )
    samples_html = (
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
pre {{ white-space: pre-wrap; max-width: 40em; margin: 0; }}
</style></head>
<body>
<h1>{title}</h1>
<p>{len(rows)} logged steps, last step {html.escape(str(rows[-1].get("step")))}.</p>
<h2>Curves</h2>
{images}
<ul class="missing">{notes}</ul>
<h2>Last logged metrics</h2>
{_metrics_table(rows)}
<h2>Run config</h2>
{_run_config(run_dir)}
<h2>Reward-hack audit</h2>
{_audit_section(run_dir)}
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
        raise MissingPath(f"run folder {run_dir} does not exist")
    if samples < 0:
        raise InvalidArgument(f"samples must be >= 0, got {samples}")
    plots, missing = make_plots(run_dir)
    page = run_dir / REPORT_FILE
    page.write_text(render_page(run_dir, plots, missing, sample_rollouts(run_dir, samples)), encoding="utf-8")
    return Report(page, plots, missing)
