"""What a run shows on the terminal: one live progress line and a few short summary lines.

The raw per-step dict goes to ``metrics.jsonl`` (and any tracker), not the console; ``verbose``
brings back transformers' own progress bars and printed logs. Slow one-off phases (the warm
start, DeepSpeed's first ``cpu_adam`` compilation) announce what they do and roughly how long.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rlvr_gym.backends.metrics import normalize

SUMMARY_LINES = 10
"""Short lines printed over a whole run (about one per tenth of the steps), beside the live line."""


def announce(message: str) -> None:
    """One line on stdout, flushed at once (it usually precedes a long silent phase)."""
    print(f"rlvr-gym: {message}", flush=True)


def quiet_libraries() -> None:
    """Silence the per-file "Loading weights"/"Writing model shards" bars of transformers/datasets."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    try:
        import datasets

        datasets.disable_progress_bars()
    except ImportError:  # datasets comes with [trl]; nothing to silence without it
        pass


def fmt_metrics(row: dict[str, Any]) -> str:
    """``reward 0.412  acc 0.31  kl 0.002  ent 1.23`` from a normalized metrics row."""
    parts = []
    for key, label, spec in (
        ("reward/mean", "reward", ".3f"),
        ("accuracy", "acc", ".2f"),
        ("kl", "kl", ".4f"),
        ("entropy", "ent", ".2f"),
        ("tools/calls_per_episode", "calls/ep", ".2f"),
        ("episode/truncated", "trunc", ".2f"),
    ):
        value = row.get(key)
        if isinstance(value, int | float):
            parts.append(f"{label} {value:{spec}}")
    return "  ".join(parts)


def progress_callback(*, every: int | None = None):
    """A ``TrainerCallback``: a tqdm line (stderr) with step, reward, accuracy, KL/entropy and
    step time, and a short summary line on stdout every ``every`` steps (default: a tenth)."""
    from tqdm.auto import tqdm
    from transformers import TrainerCallback

    class _Progress(TrainerCallback):
        bar: Any = None
        started = 0.0
        step_times: list[float] = []
        last_row: dict[str, Any] = {}

        def on_train_begin(self, args, state, control, **kwargs):
            if not state.is_world_process_zero:
                return
            self.every = every or max(1, state.max_steps // SUMMARY_LINES)
            self.step_times = []
            self.bar = tqdm(
                total=state.max_steps,
                initial=state.global_step,
                desc="GRPO",
                unit="step",
                file=sys.stderr,
                dynamic_ncols=True,
                mininterval=0.5,
            )

        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if self.bar is None:
                return
            self.step_times.append(time.perf_counter() - self.started)
            self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.bar is None or not logs or "reward" not in logs and "train/reward" not in logs:
                return
            self.last_row = normalize(logs)
            recent = self.step_times[-10:]
            step_s = f"  {sum(recent) / len(recent):.2f} s/step" if recent else ""
            self.bar.set_postfix_str(fmt_metrics(self.last_row) + step_s, refresh=False)
            if state.global_step % self.every == 0 or state.global_step == state.max_steps:
                self.bar.write(
                    f"step {state.global_step:>{len(str(state.max_steps))}}/{state.max_steps}  "
                    f"{fmt_metrics(self.last_row)}{step_s}",
                    file=sys.stdout,
                )

        def on_train_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return _Progress()


def use_progress_line(trainer: Any) -> None:
    """Swap the Trainer's own progress bar / log printer for :func:`progress_callback`."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(progress_callback())
