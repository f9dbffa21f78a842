"""Audit every reasoning-gym dataset: its own scoring vs the bridge's hardened scoring.

Run from the repo root (needs the ``[reasoning-gym]`` extra):

    .venv/bin/python bench/reasoning_gym_audit.py [--n-tasks 3] [--only gcd,maze] [--json out.json]
                                                  [--docs docs/catalogue.md]

For each ``reasoning_gym/<name>-v0`` it runs our reward-hack audit (``rlvr_gym.envs.audit``,
every family, each scoring call bounded) twice: with reasoning-gym's ``score_answer`` as it is
(``hardened=False``) and with the bridge's hardened scoring (``hardened=True``: answer types judged by us,
no partial credit). It prints a markdown table — per dataset, the exploit families that got
through under each scoring — and with ``--docs`` writes it into that page between the
``<!-- reasoning-gym-audit -->`` markers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

START, END = "<!-- reasoning-gym-audit:start -->", "<!-- reasoning-gym-audit:end -->"
BATCH_TIMEOUT, ITEM_TIMEOUT = 300.0, 20.0


def audit_one(name: str, hardened: bool, n_tasks: int) -> dict[str, Any]:
    """One audit as a small JSON record (or the reason the env cannot be audited)."""
    from rlvr_gym import envs
    from rlvr_gym.envs.audit import audit

    started = time.perf_counter()
    try:
        env = envs.make(f"reasoning_gym/{name}-v0", hardened=hardened)
    except Exception as exc:  # noqa: BLE001 - reported in the table, the run goes on
        return {"error": f"cannot make: {type(exc).__name__}: {exc}"[:200]}
    try:
        report = audit(env, n_tasks=n_tasks, batch_timeout=BATCH_TIMEOUT, item_timeout=ITEM_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"audit raised {type(exc).__name__}: {exc}"[:200]}
    finally:
        env.close()
    families = report.families
    return {
        "ok": report.ok,
        "through": sorted(f for f, r in families.items() if not r.must_pass and not r.ok and not r.errors),
        "errors": sorted(f for f, r in families.items() if r.errors),
        "gold_ok": families["gold"].ok if "gold" in families else True,
        "equivalent_ok": families["equivalent"].ok if "equivalent" in families else True,
        "failures": report.failures(),
        "seconds": round(time.perf_counter() - started, 2),
    }


def _cell(record: dict[str, Any]) -> str:
    if "error" in record:
        return f"n/a ({record['error'][:60]})"
    parts = list(record["through"]) + [f"{f} (verifier error/hang)" for f in record["errors"]]
    if not record["gold_ok"]:
        parts.append("**rejects its own gold answer**")
    if not record.get("equivalent_ok", True):
        parts.append("(rejects equivalent renderings of the gold)")
    return ", ".join(parts) if parts else "none"


def table(results: dict[str, dict[str, Any]]) -> str:
    """The markdown table plus a summary of how often each family got through."""
    own, hard = Counter(), Counter()
    for record in results.values():
        own.update(record["own"].get("through", []))
        hard.update(record["hardened"].get("through", []))
    audited = sum("error" not in r["own"] for r in results.values())

    def count(mode: str, test: Any) -> int:
        return sum(1 for r in results.values() if "error" not in r[mode] and test(r[mode]))

    def clean(record: dict[str, Any]) -> bool:
        return not record["through"] and not record["errors"]

    lines = [
        f"{audited} of {len(results)} datasets audited. No exploit family got through: "
        f"{count('own', clean)} with reasoning-gym's own scoring, {count('hardened', clean)} with the "
        f"hardened scoring. Whole audit passed (also the metamorphic families): "
        f"{count('own', lambda r: r['ok'])} and {count('hardened', lambda r: r['ok'])}. Verifier errors or "
        f"hangs: {count('own', lambda r: bool(r['errors']))} and {count('hardened', lambda r: bool(r['errors']))}.",
        "",
        "| exploit family | datasets it got through (own scoring) | (hardened) |",
        "| --- | ---: | ---: |",
    ]
    for family in sorted(set(own) | set(hard)):
        lines.append(f"| {family} | {own[family]} | {hard[family]} |")
    lines += [
        "",
        "| dataset | got through, reasoning-gym's scoring | got through, hardened |",
        "| --- | --- | --- |",
    ]
    for name, record in sorted(results.items()):
        lines.append(f"| `{name}` | {_cell(record['own'])} | {_cell(record['hardened'])} |")
    return "\n".join(lines)


def write_docs(path: Path, text: str) -> None:
    page = path.read_text(encoding="utf-8")
    if START not in page or END not in page:
        raise SystemExit(f"{path} has no {START} ... {END} markers")
    head, _, rest = page.partition(START)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-tasks", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated dataset names (default: all)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--docs", type=Path, default=None)
    parser.add_argument("--from-json", type=Path, default=None, help="render a saved --json run, no auditing")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        text = table(saved) + f"\n\n(`bench/reasoning_gym_audit.py --n-tasks {args.n_tasks}`)"
        print(text)
        if args.docs:
            write_docs(args.docs, text)
        return 0

    from rlvr_gym.envs.reasoning_gym_bridge import DATASET_NAMES

    names = [n for n in args.only.split(",") if n] or list(DATASET_NAMES)
    results: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for name in names:
        results[name] = {
            "own": audit_one(name, hardened=False, n_tasks=args.n_tasks),
            "hardened": audit_one(name, hardened=True, n_tasks=args.n_tasks),
        }
        print(
            f"{name}: own {_cell(results[name]['own'])} | hardened {_cell(results[name]['hardened'])}",
            flush=True,
        )
    text = (
        table(results)
        + f"\n\n(`bench/reasoning_gym_audit.py --n-tasks {args.n_tasks}`, {time.perf_counter() - started:.0f} s)"
    )
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if args.docs:
        write_docs(args.docs, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
