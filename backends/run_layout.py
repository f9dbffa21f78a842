"""Every name in a run folder, in one place: what ``train``, ``evaluate`` and ``report`` write.

A training run's ``OUTPUT_DIR`` (``runs/<env>`` by default)::

    config.json            the RunConfig, written first (trainers.train)
    audit.json             the fast reward-hack audit's report (trainers.train)
    tiny-model/            the offline model built for the env when no model is named
    warm-start/            the supervised warm start; warm_start.json in it marks it done
    metrics.jsonl          one row per logged step (backends.metrics)
    optimizer_state.json   where the optimizer state lived (backends.trl)
    rollouts.jsonl         sampled training rollouts (backends.rollouts)
    trainer_state.json     transformers' own record (also in every checkpoint)
    checkpoint-N/          the last ``keep_checkpoints`` checkpoints
    final/                 the trained model
    reward_curve.png       the reward curve (backends.metrics)
    README.md              TRL's model card
    runs/                  TensorBoard's event files (transformers' logging_dir)
    eval-*/                evals of the run's models (eval-final, eval-checkpoint-N)
    report.html, plots/    ``rlvr-gym report``

An eval's folder (``eval-final/`` or any ``--output-dir``): ``rollouts.jsonl``, ``summary.json``
and ``eval_settings.json``.

It lives in ``backends`` because that is the lowest layer that writes into a run folder (the
metrics, rollouts, checkpoints and model); ``trainers`` import the rest from here.
"""

from __future__ import annotations

import re

CONFIG_FILE = "config.json"
AUDIT_FILE = "audit.json"
TINY_MODEL_DIR = "tiny-model"
WARM_START_DIR = "warm-start"
WARM_START_DONE_FILE = "warm_start.json"
METRICS_FILE = "metrics.jsonl"
OPTIMIZER_FILE = "optimizer_state.json"
ROLLOUTS_FILE = "rollouts.jsonl"
TRAINER_STATE = "trainer_state.json"  # transformers' own record of a run or a checkpoint
CHECKPOINT_PREFIX = "checkpoint-"
CHECKPOINT = re.compile(rf"{CHECKPOINT_PREFIX}\d+")
FINAL_DIR = "final"
PLOT_FILE = "reward_curve.png"
MODEL_CARD_FILE = "README.md"
"""TRL's model card, written at the top of the run folder. Not in :data:`WRITTEN_BY_A_RUN`: a
user's own README there looks the same, and ``--overwrite`` keeps what it cannot tell apart
(the next run writes its own card over it)."""
TRACKER_DIR = "runs"
EVAL_PREFIX = "eval-"
SUMMARY_FILE = "summary.json"
EVAL_SETTINGS_FILE = "eval_settings.json"
REPORT_FILE = "report.html"
PLOTS_DIR = "plots"

LEFT_BY_A_FAILED_START = frozenset(
    {CONFIG_FILE, AUDIT_FILE, TINY_MODEL_DIR, WARM_START_DIR, METRICS_FILE, ROLLOUTS_FILE}
)
"""What a start that failed before its first logged step can have left."""
WRITTEN_BY_A_RUN = LEFT_BY_A_FAILED_START | {FINAL_DIR, OPTIMIZER_FILE, TRAINER_STATE, PLOT_FILE, TRACKER_DIR}
"""What ``train`` writes at the top of its folder, besides ``checkpoint-N/``: all ``--overwrite``
removes. Evals (``eval-*/``), the report (``report.html``, ``plots/``) and a user's own files stay."""


def written_by_a_run(name: str) -> bool:
    """Whether an entry at the top of a run folder is one a training run writes."""
    return name in WRITTEN_BY_A_RUN or CHECKPOINT.fullmatch(name) is not None


def eval_dir_name(model_dir_name: str) -> str:
    """The folder an eval of a run's model gets inside the run (``final`` -> ``eval-final``)."""
    return EVAL_PREFIX + model_dir_name
