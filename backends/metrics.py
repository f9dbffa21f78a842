"""Run metrics: a JSONL row per logging step, a zero-variance warning, and a PNG of the curves."""

from __future__ import annotations

import json
import logging
import resource
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlvr_gym.backends.run_layout import METRICS_FILE, PLOT_FILE

logger = logging.getLogger("rlvr_gym.trainers")

# TRL's log keys -> ours (TRL prefixes with train/ or not depending on version; both are handled).
RENAMES = {
    "reward": "reward/mean",
    "reward_std": "reward/std",
    "frac_reward_zero_std": "zero_variance_groups",
    "completions/mean_length": "completion_length",
    "completions/clipped_ratio": "clipped_ratio",
}


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak_gpu_bytes() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return int(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else None


def normalize(logs: dict[str, Any]) -> dict[str, Any]:
    """TRL's log dict with our names: ``rewards/<c>/mean`` -> ``reward/<c>/mean`` etc."""
    row: dict[str, Any] = {}
    for key, value in logs.items():
        key = key.removeprefix("train/")
        if key.startswith("rewards/"):
            key = "reward/" + key.removeprefix("rewards/")
        row[RENAMES.get(key, key)] = value
    return row


def read_metrics(run_dir: str | Path, name: str = METRICS_FILE) -> list[dict[str, Any]]:
    path = Path(run_dir) / name
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def truncate_metrics(run_dir: str | Path, after_step: int, name: str = METRICS_FILE) -> None:
    """Drop rows past ``after_step`` (a resumed run re-logs them from its checkpoint)."""
    path = Path(run_dir) / name
    kept = [row for row in read_metrics(run_dir, name) if row.get("step", 0) <= after_step]
    if path.exists():
        path.write_text("".join(json.dumps(row) + "\n" for row in kept))


class MetricsWriter:
    """Appends one JSON row per log event; warns when groups keep having zero reward variance.

    Groups whose completions all earn the same reward have zero advantage and teach nothing:
    if that fraction stays above ``zero_variance_warn`` for ``window`` logs, the run says so.
    """

    def __init__(
        self,
        run_dir: str | Path,
        *,
        zero_variance_warn: float = 0.8,
        window: int = 5,
        verify_clock: Callable[[], float] | None = None,
    ) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.zero_variance_warn = zero_variance_warn
        self.recent: deque[float] = deque(maxlen=window)
        self.warned = False
        self.step_started = time.perf_counter()
        self.step_times: list[float] = []
        # Seconds spent verifying so far (EnvRewards.verify_seconds): gives the verifier's share.
        self.verify_clock = verify_clock
        self.verify_started = 0.0
        self.verify_times: list[float] = []

    def step_begin(self) -> None:
        self.step_started = time.perf_counter()
        if self.verify_clock is not None:
            self.verify_started = self.verify_clock()

    def step_end(self) -> None:
        self.step_times.append(time.perf_counter() - self.step_started)
        if self.verify_clock is not None:
            self.verify_times.append(self.verify_clock() - self.verify_started)

    def write(self, step: int, logs: dict[str, Any]) -> dict[str, Any]:
        row = {"step": step, **normalize(logs)}
        if self.step_times:
            row["step_time_s"] = sum(self.step_times) / len(self.step_times)
            if self.verify_times and sum(self.step_times) > 0:
                row["verifier/share"] = min(1.0, sum(self.verify_times) / sum(self.step_times))
            self.step_times.clear()
            self.verify_times.clear()
        row["peak_rss_bytes"] = peak_rss_bytes()
        gpu = peak_gpu_bytes()
        if gpu is not None:
            row["peak_gpu_bytes"] = gpu
        with self.path.open("a") as out:
            out.write(json.dumps(row) + "\n")
        self._watch_zero_variance(row)
        return row

    def _watch_zero_variance(self, row: dict[str, Any]) -> None:
        value = row.get("zero_variance_groups")
        if not isinstance(value, int | float):
            return
        self.recent.append(float(value))
        full = len(self.recent) == self.recent.maxlen
        if full and not self.warned and min(self.recent) >= self.zero_variance_warn:
            self.warned = True
            logger.warning(
                "%.0f%%+ of groups had zero reward variance for %d logs in a row: they give no learning signal. "
                "Try more generations, a higher temperature, an easier env setting or a warm start.",
                100 * self.zero_variance_warn,
                len(self.recent),
            )


def optimizer_state_summary(optimizer: Any) -> dict[str, Any]:
    """Where an optimizer's states live and their bytes, through any wrappers (accelerate's
    ``AcceleratedOptimizer``, DeepSpeed's ZeRO optimizer around ``DeepSpeedCPUAdam``): the
    innermost ``.optimizer`` that holds tensor state is the one reported."""
    chain, current = [], optimizer
    while current is not None and current not in chain:
        chain.append(current)
        current = getattr(current, "optimizer", None)
    summary: dict[str, Any] = {"optimizer": " > ".join(type(o).__name__ for o in chain)}
    for level in reversed(chain):
        state = getattr(level, "state", None)
        tensors = [
            t
            for per_param in (state.values() if isinstance(state, dict) else [])
            if isinstance(per_param, dict)
            for t in per_param.values()
            if hasattr(t, "device") and getattr(t, "dim", lambda: 0)() > 0
        ]
        if tensors:
            summary["state_devices"] = sorted({str(t.device) for t in tensors})
            summary["state_bytes"] = sum(t.numel() * t.element_size() for t in tensors)
            summary["state_holder"] = type(level).__name__
            return summary
    summary.update(state_devices=[], state_bytes=0, state_holder=None)
    return summary


def reward_keys(rows: list[dict[str, Any]]) -> list[str]:
    """``reward/mean`` and every ``reward/<component>/mean`` logged in ``rows``, sorted."""
    return sorted({k for r in rows for k in r if k.startswith("reward/") and k.endswith("/mean")})


def ema_weight(points: int) -> float:
    """The smoothing weight for a curve of ``points`` steps: ~10-step memory on a long run, none
    on a handful of steps (where every point is already visible)."""
    return min(0.9, max(0.0, 1.0 - 10.0 / points)) if points else 0.0


def ema(values: list[float], weight: float) -> list[float]:
    """Exponential moving average with TensorBoard's debiasing (the first points are not pulled
    towards 0): ``s_t = w·s_{t-1} + (1-w)·x_t``, divided by ``1 - w^t``."""
    out, last = [], 0.0
    for t, value in enumerate(values, 1):
        last = weight * last + (1 - weight) * value
        out.append(last / (1 - weight**t) if weight else value)
    return out


def plot_series(
    rows: list[dict[str, Any]],
    series: dict[str, str],
    path: str | Path,
    *,
    title: str,
    ylabel: str,
    ylim: tuple[float, float] | None = None,
    dashed: tuple[str, ...] = (),
    smooth: bool = False,
) -> Path | None:
    """A PNG of ``series`` (legend label -> metrics key) against step; ``None`` if none was logged.

    ``smooth``: each curve is drawn as its EMA (:func:`ema`, weight :func:`ema_weight`), with the
    raw per-step values faint behind it — per-step GRPO metrics are noisy enough to hide a trend.
    """
    present = {label: key for label, key in series.items() if any(key in r for r in rows)}
    if not present:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for index, (label, key) in enumerate(present.items()):
        points = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), int | float)]
        steps, values = [s for s, _ in points], [v for _, v in points]
        style = "--" if label in dashed else "-"
        weight = ema_weight(len(values)) if smooth else 0.0
        if weight:
            color = f"C{index % 10}"
            ax.plot(steps, values, color=color, alpha=0.2, linewidth=0.8, linestyle=style)
            ax.plot(
                steps, ema(values, weight), color=color, label=f"{label} (EMA {weight:.2f})", linestyle=style
            )
        else:
            ax.plot(steps, values, label=label, linestyle=style)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_rewards(run_dir: str | Path, out_name: str = PLOT_FILE) -> Path | None:
    """A PNG of total and per-component reward and accuracy per step; ``None`` without metrics."""
    rows = [r for r in read_metrics(run_dir) if "reward/mean" in r]
    if not rows:
        return None
    series = {key.removesuffix("/mean"): key for key in reward_keys(rows)}
    series["accuracy"] = "accuracy"
    return plot_series(
        rows,
        series,
        Path(run_dir) / out_name,
        title=f"GRPO on {Path(run_dir).name}",
        ylabel="reward",
        ylim=(-0.05, 1.05),
        dashed=("accuracy",),
        smooth=True,
    )
