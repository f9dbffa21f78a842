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
