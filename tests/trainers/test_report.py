"""rlvr-gym report: PNG plots from metrics.jsonl, an HTML page that escapes model text, and a
render check in headless Chromium (installed by the README test command where it can be)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="plots need rlvr-gym[trl] (matplotlib)")

from rlvr_gym.trainers.cli import main
from rlvr_gym.trainers.report import build_report

PNG = b"\x89PNG\r\n\x1a\n"
HOSTILE = (
    "</pre><script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"> & 5 < 6"
)


def write_run(run_dir: Path, *, with_kl: bool = True) -> Path:
    """A run folder as a training run and an eval leave it (metrics rows, a rollout log)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for step in range(1, 11):
        row = {
            "step": step,
            "reward/mean": step / 10,
            "reward/correct/mean": step / 12,
            "reward/format/mean": 1.0,
            "accuracy": step / 11,
            "completion_length": 30 - step,
            "entropy": 2.0 - step / 10,
        }
        if with_kl:
            row["kl"] = step / 100
        rows.append(row)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    evals = run_dir / "eval-after"
    evals.mkdir()
    rollouts = [
        {
            "split": "test",
            "index": i,
            "sample": 0,
            "prompt": [{"role": "user", "content": f"What is {i} + <b>1</b>?"}],
            "completion": HOSTILE if i == 0 else f"<answer>{i + 1}</answer>",
            "verdict": {"score": float(i > 0), "passed": i > 0, "reason": "correct" if i else "bad_format"},
        }
        for i in range(3)
    ]
    (evals / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    summary = {"env": "arith", "n": 1, "tasks": 3, "accuracy": 2 / 3, "pass@k": {"pass@1": 2 / 3}}
    (evals / "summary.json").write_text(json.dumps(summary))
    return run_dir


def test_plots_and_page(tmp_path):
    report = build_report(write_run(tmp_path / "run"), samples=4)
    assert sorted(report.plots) == ["accuracy", "completion_length", "kl_entropy", "reward"]
    for path in report.plots.values():
        assert path.read_bytes().startswith(PNG) and path.stat().st_size > 5_000
    page = report.page.read_text()
    assert page.count("<img ") == 4 and "plots/reward.png" in page
    assert "<script" not in page and "onerror=" not in page.replace("onerror=&quot;", "")
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page
    assert "&lt;b&gt;1&lt;/b&gt;" in page and "&amp; 5 &lt; 6" in page
    assert "pass@1" in page and "eval-after" in page


def test_a_metric_never_logged_is_named_not_plotted(tmp_path):
    report = build_report(write_run(tmp_path / "run", with_kl=False))
    assert "kl_entropy" in report.plots  # entropy alone still plots
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward/mean": 0.5}) + "\n")
    bare = build_report(tmp_path / "bare")
    assert sorted(bare.missing) == ["accuracy", "completion_length", "kl_entropy"]
    assert "completion length: not logged in this run" in bare.page.read_text()


def test_cli_report(tmp_path, capsys):
    run = write_run(tmp_path / "run")
    assert main(["report", str(run)]) == 0
    assert f"page: {run / 'report.html'}" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nothing-here")]) == 2
    assert "does not exist" in capsys.readouterr().err


def chromium() -> str | None:
    return next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None
    )


def headless(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1300,2600",
        "--virtual-time-budget=3000",
    ]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(
    chromium() is None,
    reason="no Chromium here and none could be installed (the README test command installs it with apt-get as root)",
)
def test_page_renders_in_headless_chromium(tmp_path):
    """The page loads, the plots decode and draw, and hostile model text stays text."""
    import matplotlib.image

    report = build_report(write_run(tmp_path / "run"))
    url = report.page.resolve().as_uri()
    dom = headless(chromium(), tmp_path / "profile-dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<title>rlvr-gym report: run</title>" in dom.stdout, "an injected script changed the title"
    assert "<script" not in dom.stdout and dom.stdout.count("<img ") == 4
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom.stdout

    shot = tmp_path / "shot.png"
    result = headless(chromium(), tmp_path / "profile-shot", f"--screenshot={shot}", url)
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    pixels = (matplotlib.image.imread(shot)[..., :3] * 255).round()
    # matplotlib's first line colour (C0, #1f77b4) appears only if the PNG plots were drawn.
    c0 = ((abs(pixels - [31, 119, 180]) <= 6).all(axis=-1)).sum()
    assert c0 > 500, f"only {c0} plot-line pixels in the screenshot: the plots did not render"


def write_trained_run(run_dir: Path) -> Path:
    """A tiny-model demo run as train leaves it: config.json (model None, arith with proximity
    weight 0), audit.json, 100 noisy metric rows and training rollouts every 10 steps."""
    from rlvr_gym.backends.config import RunConfig
    from rlvr_gym.envs import make
    from rlvr_gym.envs.audit import fast_audit
    from rlvr_gym.trainers.demo import TINY_DEMO, TINY_DEMO_ENV

    run_dir.mkdir(parents=True)
    config = RunConfig(
        env_id="arith-v0", env_kwargs=TINY_DEMO_ENV["arith"], output_dir=str(run_dir), **TINY_DEMO
    )
    config.save(run_dir / "config.json")
    fast_audit(make("arith", **TINY_DEMO_ENV["arith"])).save(run_dir / "audit.json")
    rows = [
        {
            "step": step,
            "reward/mean": 0.2 + 0.5 * step / 100 + (0.3 if step % 2 else -0.2),  # noisy, rising
            "reward/correct/mean": 0.2 + 0.5 * step / 100,
            "reward/proximity/mean": 0.9,
            "accuracy": 0.1 + 0.5 * step / 100 + (0.1 if step % 3 else -0.1),
        }
        for step in range(1, 101)
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "trainer_state.json").write_text(json.dumps({"global_step": 100}))  # a finished run's record
    rollouts = [
        {
            "step": step,
            "split": "train",
            "index": step,
            "sample": sample,
            "prompt": [{"role": "user", "content": f"step {step} question"}],
            "completion": f"<answer>{step}</answer>",
            "verdict": {
                "score": float(sample == 0),
                "passed": sample == 0,
                "reason": "correct" if sample == 0 else "wrong_answer",
            },
        }
        for step in range(0, 100, 10)
        for sample in range(4)
    ]
    (run_dir / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    (run_dir / "eval-final").mkdir()
    summary = {"env": "arith-v0", "env_kwargs": TINY_DEMO_ENV["arith"], "split": "test", "n": 4, "tasks": 50}
    summary |= {"accuracy": 0.6, "pass@k": {"pass@1": 0.6, "pass@4": 0.85}}
    (run_dir / "eval-final" / "summary.json").write_text(json.dumps(summary))
    return run_dir


def test_the_page_opens_with_the_result(tmp_path):
    """Before: no headline, 'model: None', one noisy last step as 'last logged metrics'."""
    from rlvr_gym.trainers.report import headline

    run = write_trained_run(tmp_path / "arith")
    page = build_report(run).page.read_text()
    top = page[: page.index("<h2>")]
    assert "arith-v0 with settings" in top and "&quot;max_operand&quot;: 5" in top
    assert "the tiny offline model, after a 200-step supervised warm start" in top and "None" not in top
    assert "100 of 400 (100 logged)" in top
    lines = headline(run, [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()], None)
    first, last = (float(x) for x in lines["accuracy"].split(" (")[0].split(" → "))
    assert first < 0.2 < 0.5 < last, lines["accuracy"]  # mean of 20 steps each, not one noisy step
    assert "pass@4 0.850" in top and "eval eval-final" in top
    assert "passed: 7 exploit families against arith-v0 on 3 test tasks" in top
    assert (
        "Mean over the first and the last fifth of the run (steps 1–20 and 81–100, 20 logged steps each)"
        in page
    )
    assert "&quot;max_operand&quot;: 5" in page[page.index("<h2>Evaluations") :], "eval env settings missing"


def test_a_weight_0_component_is_named_not_plotted(tmp_path):
    from rlvr_gym.trainers.report import make_plots

    run = write_trained_run(tmp_path / "arith")
    page = build_report(run).page.read_text()
    assert "proximity: weight 0 in the rubric" in page
    import matplotlib.image

    with_weights = matplotlib.image.imread(make_plots(run, {"correct": 1.0, "proximity": 0.0})[0]["reward"])
    without = matplotlib.image.imread(make_plots(run, {})[0]["reward"])
    # proximity is the third line (C2, green #2ca02c): drawn only when its weight is not known to be 0
    green = lambda img: ((abs(img[..., :3] * 255 - [44, 160, 44]) <= 6).all(axis=-1)).sum()  # noqa: E731
    assert green(without) > 300 and green(with_weights) == 0


def test_curves_are_smoothed_with_the_raw_steps_faint_behind():
    from rlvr_gym.backends.metrics import ema, ema_weight

    assert ema_weight(100) == 0.9 and ema_weight(5) == 0.0
    noisy = [0.0, 1.0] * 50
    smooth = ema(noisy, 0.9)
    assert smooth[0] == 0.0 and max(smooth[20:]) - min(smooth[20:]) < 0.2  # the noise is averaged out
    assert ema([1.0, 1.0, 1.0], 0.9) == pytest.approx([1.0, 1.0, 1.0])  # debiased: not pulled to 0


def test_training_rollouts_are_spread_over_the_run(tmp_path):
    """Before: the first N rows of the log, all from the first steps."""
    from rlvr_gym.trainers.report import sample_rollouts

    run = write_trained_run(tmp_path / "arith")
    picked = [r for log, r in sample_rollouts(run, 4) if log.parent == run]
    assert [r["step"] for r in picked] == [0, 30, 60, 90]
    assert [r["verdict"]["passed"] for r in picked] == [False, True, False, True]


def test_a_no_audit_run_shows_no_stale_audit_and_rows_do_not_repeat_the_system_prompt(tmp_path):
    """Before: an audit.json left by an earlier refused start showed as this --no-audit run's
    (FAILED), the metrics were one flat dump, and every sample row repeated the system prompt."""
    from rlvr_gym.backends.config import RunConfig

    run = write_run(tmp_path / "run")
    RunConfig(env_id="arith-v0", output_dir=str(run), audit=False).save(run / "config.json")
    (run / "audit.json").write_text(
        json.dumps({"env": "arith-v0", "ok": False, "failures": ["hedging: 3/3"]})
    )
    system = "Answer with <answer>N</answer>, a rule every prompt repeats."
    rows = [
        {
            "step": s,
            "index": s,
            "sample": 0,
            "completion": "<answer>2</answer>",
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": f"What is {s} + 1?"},
            ],
            "verdict": {"score": 1.0, "passed": True, "reason": "correct"},
        }
        for s in (1, 5, 10)
    ]
    (run / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    page = build_report(run).page.read_text()
    assert "FAILED" not in page and "skipped: trained with --no-audit" in page
    assert page.count("a rule every prompt repeats") == 1 and "What is 5 + 1?" in page
    metrics = page[page.index("<h2>Metrics") : page.index("<h2>Run config")]
    assert "<th>first fifth</th><th>last fifth</th>" in metrics
    assert "<th colspan='3'>reward</th>" in metrics and "<td>correct/mean</td>" in metrics


def test_train_records_the_audit_choice_and_drops_a_stale_audit(tmp_path, capsys):
    import tests.support.hackable_envs  # noqa: F401 - registers the hack envs for the in-process CLI

    # fsdp-vllm cannot run on a CPU: each start stops at the backend's check, loading no model
    args = ["train", "--env", "hack/hedging-v0", "--backend", "fsdp-vllm", "--output-dir", str(tmp_path)]
    assert main(args) == 2 and "audit" in capsys.readouterr().err  # refused by the audit
    assert json.loads((tmp_path / "config.json").read_text())["audit"] is True
    assert main([*args, "--no-audit"]) == 2 and "cannot run here" in capsys.readouterr().err
    assert json.loads((tmp_path / "config.json").read_text())["audit"] is False
    assert not (tmp_path / "audit.json").exists(), "the refused start's audit would show as this run's"


def test_the_report_says_how_far_a_run_got_from_the_runs_trainer_state(tmp_path):
    from rlvr_gym.trainers.report import headline

    run = tmp_path / "run"
    run.mkdir()
    rows = [{"step": 6, "reward/mean": 0.5}]
    (run / "metrics.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert headline(run, rows, None)["steps"] == "6 (1 logged; the run did not finish)"
    (run / "trainer_state.json").write_text(json.dumps({"global_step": 7}))
    assert headline(run, rows, None)["steps"] == "7 (1 logged)"  # not the last *logged* step
    assert "7 (1 logged)" in build_report(run).page.read_text()
