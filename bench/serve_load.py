"""Load on ``rlvr-gym serve`` over 127.0.0.1: verified rollouts per second, latency, memory, losses.

Starts the server as a subprocess (``python -m rlvr_gym.trainers.cli serve ...``), then per env:

* **sessions**: ``--sessions`` OpenEnv WebSocket sessions (``GenericEnvClient``, one asyncio
  loop), all open at once or ``--concurrency`` at a time (a steady load), each ``reset(split, index)`` then one ``step`` — half the oracle's completion,
  half a wrong one; every answer is checked (its index, its verdict) so a lost, duplicated or
  crossed verdict is counted;
* **batch**: one ``POST /ID/score`` of ``--batch`` items, checked the same way;

and reports rollouts/s, p50/p99 latency (reset sent → verdict back), the server's peak RSS
(``VmHWM``) before and after, and the resident memory of the processes that score (the server's
children with ``local``; the Ray cluster's processes, actors included, with ``ray``).
``--scoring ray`` scores on a loopback Ray cluster the bench starts (a head with no CPUs, one node
of ``--ray-cpus`` CPUs, every process on 127.0.0.1: the sockets of the bench's process tree are
checked and any off loopback is reported).

    python bench/serve_load.py --envs arith gsm8k humaneval --sessions 1000 --batch 1000 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from rlvr_gym import envs


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mib(pid: int) -> dict[str, float]:
    """The process's resident memory now and at its peak (Linux /proc), in MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


def children_of() -> dict[int, list[int]]:
    """Every process's children (Linux /proc), for summing a process tree's memory."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):  # gone while we looked
                stat = Path(f"/proc/{entry}/stat").read_text()
                tree.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    return tree


def descendants(pid: int, skip: tuple[int, ...] = ()) -> list[int]:
    """The processes under ``pid`` (not itself), leaving out the subtrees of ``skip``."""
    tree, found, todo = children_of(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in skip:
                found.append(child)
                todo.append(child)
    return found


def tree_rss_mib(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError, KeyError):  # exited while we looked
            total += rss_mib(pid)["VmRSS"]
    return round(total, 1)


def off_loopback(pids: list[int]) -> list[str]:
    """The TCP/UDP sockets of ``pids`` bound or connected off loopback (``ss``): a local address
    that is not 127.x / ::1 (``*`` and ``0.0.0.0`` included: every interface), or such a peer."""
    table = subprocess.run(["ss", "-tunapH"], capture_output=True, text=True, check=True).stdout
    marks = tuple(f"pid={pid}," for pid in pids)

    def loopback(address: str) -> bool:
        host = address.rsplit(":", 1)[0].strip("[]").removeprefix("::ffff:")
        return host.startswith("127.") or host == "::1"

    bad = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) >= 6 and any(mark in line for mark in marks):
            local, peer = fields[4], fields[5]
            if not loopback(local) or not (peer.endswith(":*") or loopback(peer)):  # *:* = not connected
                bad.append(line[:160])
    return bad


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cases(env_id: str, n: int, split: str) -> list[tuple[int, str, bool]]:
    """(index, completion, should pass) for n rollouts: the oracle on even items, a wrong answer on odd."""
    env = envs.make(env_id)
    tasks = env.tasks(split)
    out = []
    for i in range(n):
        index = i % len(tasks)
        good = i % 2 == 0
        out.append((index, env.reference_completion(tasks[index]) if good else "I am not sure.", good))
    return out


async def sessions(
    url: str, work: list[tuple[int, str, bool]], split: str, concurrency: int | None = None
) -> dict[str, Any]:
    from openenv.core import GenericEnvClient

    latencies: list[float] = []
    problems: list[str] = []
    gate = asyncio.Semaphore(concurrency or len(work))

    async def one(i: int, index: int, completion: str, good: bool) -> None:
        async with gate:
            await play(i, index, completion, good)

    async def play(i: int, index: int, completion: str, good: bool) -> None:
        client = GenericEnvClient(base_url=url, message_timeout_s=600)
        start = time.perf_counter()
        try:
            first = await client.reset(split=split, index=index)
            result = await client.step({"completion": completion})
            latencies.append(time.perf_counter() - start)
            obs = result.observation
            if first.observation["index"] != index or obs["index"] != index:
                problems.append(f"{i}: crossed (asked {index}, got {obs['index']})")
            elif obs["passed"] is not good:
                problems.append(f"{i}: passed={obs['passed']} reason={obs['reason']}")
        except Exception as exc:  # noqa: BLE001 - a bench counts every failure
            problems.append(f"{i}: {type(exc).__name__}: {exc}"[:200])
        finally:
            with contextlib.suppress(Exception):  # a refused session has nothing to close
                await client.close()

    start = time.perf_counter()
    await asyncio.gather(*(one(i, *case) for i, case in enumerate(work)))
    wall = time.perf_counter() - start
    return {
        "concurrency": concurrency or len(work),
        "rollouts": len(work),
        "answered": len(latencies),
        "problems": len(problems),
        "first_problems": problems[:5],
        "wall_s": round(wall, 2),
        "rollouts_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "p99_ms": round(1000 * percentile(latencies, 0.99), 1) if latencies else None,
    }


def batch(url: str, work: list[tuple[int, str, bool]], split: str) -> dict[str, Any]:
    body = {
        "completions": [c for _, c, _ in work],
        "labels": [{"split": split, "index": i} for i, _, _ in work],
    }
    request = urllib.request.Request(
        f"{url}/score", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=1800) as response:
        answer = json.loads(response.read())
    wall = time.perf_counter() - start
    wrong = [
        i
        for i, (v, (_, _, good)) in enumerate(zip(answer["verdicts"], work, strict=True))
        if v is None or v["passed"] is not good
    ]
    return {
        "items": len(work),
        "answered": len(answer["rewards"]),
        "problems": len(wrong) + abs(len(answer["rewards"]) - len(work)),
        "wall_s": round(wall, 2),
        "items_per_s": round(len(work) / wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["arith", "gsm8k", "humaneval"])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument(
        "--concurrency", type=int, default=None, help="sessions open at once (default: all of them at once)"
    )
    parser.add_argument("--split", default="test")
    parser.add_argument("--scoring", default="local", choices=["local", "ray"])
    parser.add_argument(
        "--ray-cpus", type=int, default=os.cpu_count(), help="CPUs of the Ray node (default: this machine's)"
    )
    parser.add_argument("--json", default=None, help="write the results here too")
    args = parser.parse_args(argv)

    port = free_port()
    command = [sys.executable, "-m", "rlvr_gym.trainers.cli", "serve", *args.envs, "--port", str(port)]
    command += ["--scoring", args.scoring, "--max-sessions", str(max(1024, args.sessions))]
    cluster = None
    if args.scoring == "ray":  # a loopback cluster here: a head with no CPUs (the GPU host), a CPU node
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # nodes and driver on 127.0.0.1
        from ray.cluster_utils import Cluster

        cluster = Cluster(
            initialize_head=True,
            head_node_args={"node_ip_address": "127.0.0.1", "num_cpus": 0, "include_dashboard": False},
        )
        cluster.add_node(node_ip_address="127.0.0.1", num_cpus=args.ray_cpus)
        command += ["--ray-address", cluster.address]
    server = subprocess.Popen(command, env={**os.environ})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"{base}/health", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.5)

        def scoring_pids() -> list[int]:  # local: the server's workers; ray: the cluster's processes
            if cluster is None:
                return descendants(server.pid)
            return descendants(os.getpid(), skip=(server.pid,))

        results: dict[str, Any] = {
            "scoring": args.scoring,
            "cpus": os.cpu_count(),
            "ray_node_cpus": args.ray_cpus if cluster is not None else None,
            "load_average_start": os.getloadavg(),
            "server_start": rss_mib(server.pid),
        }
        for env_id in args.envs:
            work = cases(env_id, max(args.sessions, args.batch), args.split)
            url = f"{base}/{env_id}"
            row = {
                "sessions": asyncio.run(sessions(url, work[: args.sessions], args.split, args.concurrency)),
                "batch": batch(url, work[: args.batch], args.split),
                "server_memory_mib": rss_mib(server.pid),
                "scoring_processes": {
                    "count": len(scorers := scoring_pids()),
                    "rss_mib": tree_rss_mib(scorers),
                },
                "load_average": os.getloadavg(),
            }
            results[env_id] = row
            print(env_id, json.dumps(row), flush=True)
        if cluster is not None:  # what the nodes advertise to each other and to drivers
            results["ray_node_addresses"] = sorted({n.node_ip_address for n in cluster.list_all_nodes()})
        results["off_loopback_sockets"] = off_loopback([os.getpid(), server.pid, *descendants(os.getpid())])
    finally:
        server.terminate()
        server.wait(60)
        if cluster is not None:
            cluster.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
