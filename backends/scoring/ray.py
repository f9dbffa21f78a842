"""``ray`` scoring: batches fan out to actors on the CPU nodes of a Ray cluster.

Why: at the scale people train, the GPU host's CPUs are busy feeding GPUs, and scoring a step's
code completions can take longer than generating them. Each actor holds one copy of the env on
its node (so its own sandbox pool and math worker) and declares the CPUs it uses as Ray
resources, so Ray places ``node CPUs / cpus_per_actor`` actors on every node with CPUs. A batch
is cut into chunks along task groups (a prompt's completions stay together), dealt to the
least-loaded actors, and put back in order.

Nothing lost, nothing twice, nothing stalls:

* every chunk carries the batch's deadline (wall clock): an actor that reaches a chunk after it
  returns it unscored without running it, and the driver stops waiting at it; items not scored
  by then come back ``None`` (unscored, never 0), as ``local`` leaves an overrunning batch;
* a chunk whose actor or node dies is re-run on another actor; a chunk's verdicts are written
  once, by index, from the one call that returned them;
* one hostile item costs only itself: a completion over ``max_chars`` is ``bad_format`` at the
  driver (never shipped, never verified); an actor scores its chunk as ``local`` scores a batch
  (:class:`ScoringActor`), so an item over the item budget is its own ``timeout`` and the rest of
  its chunk is scored; an actor still busy with a chunk of an earlier batch
  (past that batch's deadline) is dealt no new chunk while another actor is free, and a chunk
  queued behind a running one is run again on an actor that has gone idle (the first verdicts
  back are kept) — so a slow item does not hold its neighbours, or the next batch, hostage;
* the cluster is reached (a TCP probe, then ``ray.init``) before anything else: unreachable is a
  one-line :class:`ClusterUnreachableError`, before any model loads;
* the first actor on every node reports that node's sandbox walls (the layers
  ``rlvr-gym sandbox-info`` prints); a node missing a layer this host has is refused
  (:class:`WallsMissingError`), not hidden.

Loopback: Ray rewrites a ``127.0.0.1`` address to the machine's interface address; for a
cluster whose nodes were started on loopback (``--node-ip-address 127.0.0.1``, as in the tests)
this module keeps the driver on loopback too (see :func:`connect`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr_gym.backends.console import announce
from rlvr_gym.backends.scoring import (
    MAX_SCORED_CHARS,
    AwaitableScorer,
    check_max_chars,
    completion_chars,
    oversized,
)
from rlvr_gym.backends.scoring.local import ITEM_TIMEOUT_S, LocalScorer, check_item_timeout, item_budget
from rlvr_gym.envs import Env
from rlvr_gym.error import (  # noqa: F401 - defined with the whole tree
    ClusterUnreachableError,
    InvalidArgumentError,
    NotAvailableError,
    RunFailedError,
    WallsMissingError,
)
from rlvr_gym.verifiers import Reason, Task, Verdict

logger = logging.getLogger("rlvr_gym.backends")

NAMESPACE = "rlvr_gym"
PROBE_TIMEOUT_S = 5.0
CHUNKS_PER_ACTOR = 16
"""Chunks a batch is cut into per actor: enough that the last ones finish together (the tail
of a batch is one chunk's work on one actor), few enough that a round trip per chunk is noise."""
PLACE_GRACE_S = 15.0
"""After the first actor starts, how long the others may take before they are given up."""
RETURN_MARGIN_S = 0.5
"""An actor stops a chunk this long (at most a tenth of the budget) before the batch's deadline,
so the verdicts it has made reach the driver before the driver stops waiting."""
MAX_RERUNS = 3
"""A chunk whose actor died this many times is left unscored rather than tried forever."""
_LOOPBACK = ("127.", "localhost", "::1", "[::1]")


def import_ray() -> Any:
    """``ray``, or a one-line :class:`NotAvailableError` naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise NotAvailableError(
            "scoring='ray' needs Ray: pip install 'rlvr-gym[ray]' (ray 2.60) here and on every node"
        ) from None
    return ray


LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's environment switch for one-machine clusters: at "0" when Ray is first imported, Ray keeps
127.0.0.1 as the node address instead of rewriting it to the machine's interface address."""


def keep_loopback() -> None:
    """Keep a loopback cluster's traffic on ``lo``: set :data:`LOOPBACK_SWITCH` before Ray loads
    (Ray reads it once, at import). Where Ray was imported earlier without it, say so."""
    if "ray" not in sys.modules:
        os.environ.setdefault(LOOPBACK_SWITCH, "0")
    elif os.environ.get(LOOPBACK_SWITCH) != "0":
        logger.warning(
            "Ray was imported before %s=0 was set: it may register this driver on the interface "
            "address instead of 127.0.0.1; set it before importing ray",
            LOOPBACK_SWITCH,
        )


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (IPv6 in brackets) -> ``(host, port)``; anything else is refused."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidArgumentError(
            f"ray address must be host:port (e.g. 10.0.0.5:6379) or 'auto', got {address!r}"
        )
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    return host.startswith(_LOOPBACK)


def connect(address: str | None) -> bool:
    """Join the cluster at ``address`` as a driver; True if this call connected (False: already).

    ``None`` means ``RAY_ADDRESS`` or the cluster ``ray start`` left on this machine (``auto``);
    a new local cluster is never started behind the caller's back. For a loopback head, Ray's
    rewrite of 127.0.0.1 to the interface address is switched off, so the driver registers on
    loopback like the nodes (``_node_ip_address``) and no traffic leaves ``lo``.
    """
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    node_ip = None
    if target != "auto":
        host, port = split_address(target)
        try:
            socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
        except OSError as exc:
            raise ClusterUnreachableError(
                f"cannot reach the Ray cluster at {target}: {exc.strerror or exc} "
                f"(start its head with `ray start --head --port {port}`, or fix --ray-address)"
            ) from None
        if is_loopback(host):
            keep_loopback()
            node_ip = "127.0.0.1"
    ray = import_ray()
    if ray.is_initialized():
        return False
    try:
        ray.init(
            address=target,
            namespace=NAMESPACE,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            _node_ip_address=node_ip,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterUnreachableError(f"cannot connect to the Ray cluster at {target}: {first}") from None
    return True


class _Connection:
    """The driver connection :func:`connect` made, shared by every scorer of this process that
    joined it: the last one to leave ends it. (When the first of several scorers — a server's
    envs — ended it on its own, the others' next Ray call made Ray connect again by itself, to
    whichever cluster it found on the machine, or to a new one it started.)"""

    lock = threading.Lock()
    job: str | None = None
    """The Ray job id of the connection this module made (each driver connection has its own)."""
    users = 0

    @staticmethod
    def current_job(ray: Any) -> str | None:
        return ray.get_runtime_context().get_job_id() if ray.is_initialized() else None

    @classmethod
    def join(cls, address: str | None) -> str | None:
        """Connect, or share the connection this module made; its job id if this scorer counts
        as a user of it (``None``: the caller's own connection, which is never ended here)."""
        with cls.lock:
            made = connect(address)
            job = cls.current_job(import_ray())
            if made:
                cls.job, cls.users = job, 0
            elif job != cls.job:
                return None
            cls.users += 1
            return job

    @classmethod
    def leave(cls, job: str, ray: Any) -> None:
        with cls.lock:
            if job != cls.job or cls.current_job(ray) != job:  # ended already, by someone else
                return
            cls.users -= 1
            if cls.users <= 0:
                cls.job, cls.users = None, 0
                ray.shutdown()


def walls_here() -> dict[str, Any]:
    """This machine's sandbox layers, as ``rlvr-gym sandbox-info`` reports them."""
    from rlvr_gym.verifiers.code import SandboxPool
    from rlvr_gym.verifiers.code.sandbox import LAYERS

    try:
        with SandboxPool(1) as pool:
            isolation = pool.isolation
    except Exception as exc:  # noqa: BLE001 - a node that cannot start a sandbox is reported, not crashed
        return {"error": f"{type(exc).__name__}: {exc}", "missing": ["sandbox"]}
    return {**{k: isolation[k] for k in LAYERS}, "missing": list(isolation["missing"])}


def missing_layers(walls: dict[str, Any]) -> set[str]:
    """The names of the missing layers (``"seccomp: <why>"`` -> ``"seccomp"``)."""
    return {str(entry).split(":")[0].strip() for entry in walls.get("missing", [])}


def check_walls(driver: dict[str, Any], node: dict[str, Any], where: str) -> None:
    """Refuse a node missing a sandbox layer this host has (one line naming the layers)."""
    lacking = sorted(missing_layers(node) - missing_layers(driver))
    if lacking:
        raise WallsMissingError(
            f"scoring node {where} lacks sandbox layers this host has: {', '.join(lacking)} "
            "(run `rlvr-gym sandbox-info` there and fix it, or take the node out of the cluster)"
        )


_driver_walls: dict[str, Any] | None = None


def driver_walls() -> dict[str, Any]:
    global _driver_walls
    if _driver_walls is None:
        _driver_walls = walls_here()
    return _driver_walls


class ScoringActor:
    """One env on one node, scoring chunks of batches (run as a Ray actor, see :class:`RayScorer`).

    The chunk is scored by the ``local`` scorer's machinery (a worker process, verdicts item by
    item): an item over the batch's item budget is its own ``timeout`` and the rest of its chunk
    is scored, so a slow item costs only itself, not its chunk.
    """

    def __init__(
        self,
        env: Env,
        cpus: int,
        max_chars: int = MAX_SCORED_CHARS,
        item_timeout_s: float = ITEM_TIMEOUT_S,
    ) -> None:
        os.environ["RLVR_GYM_SANDBOX_WORKERS"] = str(cpus)  # the env's pool uses the CPUs declared
        self.env, self.max_chars = env, max_chars
        self.scorer = LocalScorer(env, max_chars=max_chars, item_timeout_s=item_timeout_s)

    def hello(self, walls: bool) -> dict[str, Any]:
        import ray

        self.scorer.start()  # the worker process imports now, not in the first batch's budget
        return {
            "node": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "walls": walls_here() if walls else None,
        }

    def score(
        self,
        completions: Sequence[object],
        tasks: Sequence[Task],
        deadline: float | None,
        item_budget_s: float,
    ) -> list[Verdict | None] | None:
        """The chunk's verdicts (``None`` for items not made by ``deadline``, wall clock), or
        ``None`` when it arrives past its deadline (not run at all)."""
        left = None if deadline is None else deadline - time.time()
        if left is not None and left <= 0:
            return None
        return self.scorer.score_within(completions, tasks, timeout_s=left, item_budget_s=item_budget_s)


def declared_cpus(cpus_per_actor: int, shared_by: int) -> float:
    """The CPUs one actor declares to Ray when ``shared_by`` scorers of a process share the
    cluster: its share of ``cpus_per_actor``, rounded down to Ray's 0.0001 resource unit (so the
    sharers' actors together never declare more than the node has)."""
    if isinstance(shared_by, bool) or not isinstance(shared_by, int) or shared_by < 1:
        raise InvalidArgumentError(f"shared_by must be an integer >= 1, got {shared_by!r}")
    cpus = math.floor(cpus_per_actor * 10_000 / shared_by) / 10_000
    if cpus <= 0:
        raise InvalidArgumentError(f"{shared_by} scorers cannot share {cpus_per_actor} CPU(s) per actor")
    return cpus if shared_by > 1 else cpus_per_actor


def plan_chunks(tasks: Sequence[Task], size: int) -> list[list[int]]:
    """Indices cut into chunks of about ``size``, along runs of equal tasks (a prompt's group
    stays on one actor unless it alone is larger than ``size``)."""
    chunks: list[list[int]] = []
    current: list[int] = []
    start = 0
    while start < len(tasks):
        end = start + 1
        while end < len(tasks) and (tasks[end] is tasks[start] or tasks[end] == tasks[start]):
            end += 1
        for piece in range(start, end, size):
            group = list(range(piece, min(piece + size, end)))
            if current and len(current) + len(group) > size:
                chunks.append(current)
                current = []
            current += group
        start = end
    if current:
        chunks.append(current)
    return chunks


@dataclass
class _Slot:
    handle: Any
    node: str


class RayScorer(AwaitableScorer):
    """Scores an env's batches on Ray actors across the cluster's CPU nodes.

    ``cpus_per_actor`` CPUs are declared per actor (its sandbox pool gets that many workers);
    ``in_flight`` chunks are kept queued per actor; ``chunk_size`` (default: about 16 chunks
    per actor, at most 64 items) sets the unit of fan-out and of re-running. In a multi-process
    run (``WORLD_SIZE`` ranks, each scoring its own share of a step) every rank starts
    ``node CPUs / WORLD_SIZE`` actors per node. ``runtime_env`` is
    Ray's, for the actors (env vars such as ``RLVR_GYM_DATA_DIR`` for nodes whose data lies
    elsewhere). ``max_chars``: longer completions are ``bad_format`` at the driver.
    ``shared_by``: the scorers of this process that share the cluster (``rlvr-gym serve`` with
    several envs, one scorer each); each of their actors declares ``cpus_per_actor / shared_by``
    CPUs, so every env gets actors on every node (even a 1-CPU one) and an env busy alone can use
    all of a node's CPUs — where whole CPUs each, the first env's actors would take every CPU and
    the next env's could never be placed. ``stats`` counts re-run, duplicated and unscored items.
    """

    name = "ray"

    def __init__(
        self,
        env: Env,
        *,
        address: str | None = None,
        cpus_per_actor: int = 1,
        in_flight: int = 2,
        chunk_size: int | None = None,
        start_timeout_s: float = 120.0,
        runtime_env: dict[str, Any] | None = None,
        check_walls: bool = True,
        max_chars: int = MAX_SCORED_CHARS,
        item_timeout_s: float = ITEM_TIMEOUT_S,
        shared_by: int = 1,
    ) -> None:
        self.max_chars = check_max_chars(max_chars)
        self.item_timeout_s = check_item_timeout(item_timeout_s)
        if cpus_per_actor < 1 or in_flight < 1 or (chunk_size is not None and chunk_size < 1):
            raise InvalidArgumentError("cpus_per_actor, in_flight and chunk_size must be >= 1")
        self.actor_cpus = declared_cpus(cpus_per_actor, shared_by)
        self.ray = import_ray()
        self.address = address
        self._joined = _Connection.join(address)
        self.cpus_per_actor = cpus_per_actor
        self.in_flight = in_flight
        self.chunk_size = chunk_size
        self.start_timeout_s = start_timeout_s
        self.runtime_env = runtime_env
        self.check_walls = check_walls
        self.ranks = max(1, int(os.environ.get("WORLD_SIZE", "1")))  # training ranks sharing the CPUs
        self.stats: Counter[str] = Counter()
        self._item_budget_s = self.item_timeout_s
        self.walls: dict[str, dict[str, Any]] = {}
        self._slots: dict[int, _Slot] = {}
        self._busy: dict[Any, int] = {}  # calls of earlier batches still running: ref -> actor key
        self._next_key = 0
        self._nodes: frozenset[str] = frozenset()
        self._known: set[str] = set()  # nodes that had our actors: one that vanishes is counted lost
        self._actor_class = self.ray.remote(ScoringActor)
        try:
            try:
                self._env_ref = self.ray.put(env)
            except Exception as exc:  # noqa: BLE001 - Ray's pickling errors vary; the message says what to do
                raise InvalidArgumentError(
                    f"scoring='ray' ships the env to its actors by pickle, and this one does not pickle ({exc}); "
                    "define the env class at module level or use a registered env id"
                ) from None
            self._refresh()
            if not self._slots and self._nodes:
                raise ClusterUnreachableError(
                    f"no scoring actor could be placed on the {len(self._nodes)} CPU node(s) of the Ray "
                    f"cluster at {address or 'auto'} within {start_timeout_s:.0f} s: their CPUs are taken "
                    "by other actors (see `ray status`; other drivers, or other scorers of this process "
                    "not given shared_by)"
                )
            if not self._slots:
                raise ClusterUnreachableError(
                    f"the Ray cluster at {address or 'auto'} has no node with {cpus_per_actor} CPU(s) "
                    "for scoring actors (start CPU nodes with `ray start --address HEAD:PORT`)"
                )
            announce(
                f"scoring on Ray at {address or 'auto'}: {len(self.nodes())} node(s), {self.actors} actor(s) "
                f"({', '.join(f'{n[:8]}: {c}' for n, c in sorted(self.nodes().items()))})"
            )
        except BaseException:
            self.close()
            raise

    # ----- actors ------------------------------------------------------------------------------
    def _alive_nodes(self) -> dict[str, dict[str, Any]]:
        return {
            n["NodeID"]: n
            for n in self.ray.nodes()
            if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= self.cpus_per_actor
        }

    def _refresh(self) -> None:
        """Drop actors of dead nodes; start actors on live nodes that have none of ours."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self._alive_nodes()
        self._nodes = frozenset(nodes)
        self._count_lost(nodes)
        for key in [k for k, s in self._slots.items() if s.node not in nodes]:
            self._drop(key)
        staffed = {s.node for s in self._slots.values()}
        started: dict[Any, tuple[int, str, bool]] = {}
        for node_id, node in nodes.items():
            if node_id in staffed:
                continue
            # Every training rank is a driver with actors of its own: each takes its share.
            share = int(node["Resources"]["CPU"] // self.cpus_per_actor // self.ranks)
            for slot in range(max(1, share)):
                handle = self._actor_class.options(
                    num_cpus=self.actor_cpus,
                    max_restarts=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                    runtime_env=self.runtime_env,
                ).remote(self._env_ref, self.cpus_per_actor, self.max_chars, self.item_timeout_s)
                key = self._next_key
                self._next_key += 1
                self._slots[key] = _Slot(handle, node_id)
                probe = self.check_walls and slot == 0
                started[handle.hello.remote(probe)] = (key, node_id, probe)
        if not started:
            return
        # Once one actor is up, the others get a short grace: one that cannot be placed (its CPUs
        # taken by another driver) is dropped instead of holding every batch up.
        ready, late = self.ray.wait(list(started), num_returns=1, timeout=self.start_timeout_s)
        if ready and late:
            more, late = self.ray.wait(late, num_returns=len(late), timeout=PLACE_GRACE_S)
            ready += more
        for ref in late:
            key, node_id, _ = started[ref]
            logger.warning(
                "scoring actor on node %s did not start in %.0f s; not used",
                node_id[:8],
                self.start_timeout_s,
            )
            self._drop(key)
        for ref in ready:
            key, node_id, probe = started[ref]
            try:
                hello = self.ray.get(ref)
            except self.ray.exceptions.RayError as exc:
                logger.warning("scoring actor on node %s failed to start: %s", node_id[:8], exc)
                self._drop(key)
                continue
            if probe:
                self.walls[node_id] = hello["walls"]
                address = nodes[node_id].get("NodeManagerAddress", "?")
                check_walls(driver_walls(), hello["walls"], f"{node_id[:8]} ({address})")

    def _count_lost(self, alive: Mapping[str, Any]) -> None:
        """Count (and say, one line each) the nodes with our actors that left the cluster."""
        for node in sorted(self._known - set(alive)):
            self.stats["lost_nodes"] += 1
            announce(
                f"scoring node {node[:8]} left the Ray cluster; its unfinished chunks re-ran on other nodes"
            )
        self._known = set(alive)

    def report(self) -> dict[str, Any]:
        """What scoring on Ray did, for ``summary.json``: nodes and actors now, nodes and actors
        lost, items re-run after a loss and items left unscored."""
        with contextlib.suppress(Exception):  # a cluster gone entirely: report what was counted
            self._count_lost(self._alive_nodes())
        counted = ("lost_nodes", "lost_actors", "rerun_items", "unscored_items", "scored_items")
        return {
            "scorer": "ray",
            "nodes": len(self.nodes()),
            "actors": self.actors,
            **{name: self.stats[name] for name in counted},
        }

    def _drop(self, key: int) -> None:
        slot = self._slots.pop(key, None)
        if slot is not None and self.ray.is_initialized():  # ray.kill would connect anew, anywhere
            with contextlib.suppress(Exception):  # an actor of a dead node is already gone
                self.ray.kill(slot.handle)

    @property
    def actors(self) -> int:
        return len(self._slots)

    def nodes(self) -> dict[str, int]:
        """Actors per node id."""
        return dict(Counter(s.node for s in self._slots.values()))

    # ----- scoring -----------------------------------------------------------------------------
    def score(
        self, completions: Sequence[object], tasks: Sequence[Task], *, timeout_s: float | None = None
    ) -> list[Verdict | None]:
        """Verdicts in order; ``None`` for items not scored within ``timeout_s`` (``None``: no budget)."""
        if len(completions) != len(tasks):
            raise InvalidArgumentError(f"score got {len(completions)} completions for {len(tasks)} tasks")
        if not completions:
            return []
        if frozenset(self._alive_nodes()) != self._nodes:
            self._refresh()  # a node joined or left since the last batch
        deadline = time.time() + timeout_s if timeout_s is not None else None
        # Actors stop a little earlier, so what they made arrives in time; each item has the
        # batch's item budget wherever in the batch its chunk runs.
        stop_by = (
            None if timeout_s is None else time.time() + timeout_s - min(RETURN_MARGIN_S, timeout_s / 10)
        )
        self._item_budget_s = item_budget(self.item_timeout_s, timeout_s)
        results: list[Verdict | None] = [None] * len(tasks)
        todo = []
        for index, completion in enumerate(completions):
            chars = completion_chars(completion)
            if chars > self.max_chars:  # never shipped: it would cost an actor, and its neighbours
                results[index] = oversized(chars, self.max_chars)
            else:
                todo.append(index)
        size = self.chunk_size or max(
            1, min(64, math.ceil(len(todo) / (CHUNKS_PER_ACTOR * max(1, len(self._slots)))))
        )
        chunks = [[todo[i] for i in chunk] for chunk in plan_chunks([tasks[i] for i in todo], size)]
        pending = deque(range(len(chunks)))
        reruns: Counter[int] = Counter()
        inflight: dict[Any, tuple[int, int]] = {}
        queues: dict[int, deque[Any]] = {}  # per actor, its calls in the order it runs them
        done: set[int] = set()
        duplicated: set[int] = set()
        load: Counter[int] = Counter()
        self._forget_finished_busy()
        for ref, key in self._busy.items():
            load[key] += 1
            queues.setdefault(key, deque()).append(ref)
        while (pending or inflight) and len(done) < len(chunks):
            left = deadline - time.time() if deadline is not None else 1.0
            if left <= 0:
                break
            self._deal(pending, chunks, completions, tasks, stop_by, inflight, queues, load)
            if pending and not inflight:  # every actor is gone: look for live nodes once more
                self._refresh()
                if not self._slots:
                    if deadline is None:
                        raise RunFailedError("every Ray scoring actor is gone (all CPU nodes left the cluster)")
                    break
                continue
            if not pending:
                self._duplicate_queued(
                    chunks, completions, tasks, stop_by, inflight, queues, load, done, duplicated
                )
            waiting = list(inflight) + [r for r in self._busy if r not in inflight]
            ready, _ = self.ray.wait(waiting, num_returns=1, timeout=min(left, 1.0))
            for ref in ready:
                if ref in self._busy and ref not in inflight:  # an earlier batch's call ended
                    key = self._busy.pop(ref)
                    load[key] -= 1
                    _discard(queues.get(key), ref)
                    continue
                chunk, key = inflight.pop(ref)
                load[key] -= 1
                _discard(queues.get(key), ref)
                batch = chunks[chunk]
                try:
                    verdicts = self.ray.get(ref)
                except self.ray.exceptions.RayTaskError as exc:  # verify_batch itself raised: a bug
                    cause = exc.cause if exc.cause is not None else exc
                    error = f"scoring actor: {type(cause).__name__}: {cause}"
                    verdicts = [Verdict.fail(Reason.ERROR, error=error)] * len(batch)
                except self.ray.exceptions.RayError as exc:  # the actor or its node died
                    self._lost(key, exc)
                    reruns[chunk] += 1
                    if chunk not in done and reruns[chunk] <= MAX_RERUNS:
                        pending.appendleft(chunk)
                        self.stats["rerun_items"] += len(batch)
                    continue
                if verdicts is None or chunk in done:  # past its deadline (not run), or a copy's twin
                    continue
                if len(verdicts) != len(batch):
                    verdicts = [
                        Verdict.fail(Reason.ERROR, error="scoring actor returned a short batch")
                    ] * len(batch)
                for index, verdict in zip(batch, verdicts, strict=True):
                    results[index] = verdict
                done.add(chunk)
                self.stats["chunks_done"] += 1
        for ref, (_, key) in inflight.items():  # still running or queued: the next batch avoids them
            if key in self._slots:
                self._busy[ref] = key
        unscored = sum(v is None for v in results)
        if unscored:
            self.stats["unscored_items"] += unscored
            logger.warning(
                "%d of %d items missed the %s s budget and are left unscored",
                unscored,
                len(results),
                timeout_s,
            )
        self.stats["scored_items"] += len(results) - unscored
        return results

    def _deal(
        self,
        pending: deque[int],
        chunks: list[list[int]],
        completions: Sequence[object],
        tasks: Sequence[Task],
        deadline: float | None,
        inflight: dict[Any, tuple[int, int]],
        queues: dict[int, deque[Any]],
        load: Counter[int],
    ) -> None:
        """Hand pending chunks to the least-loaded actors, up to ``in_flight`` each. An actor still
        running an earlier batch's call gets none while some actor is free of them."""
        busy = set(self._busy.values())
        free = [k for k in self._slots if k not in busy] or list(self._slots)
        for key in sorted(free, key=lambda k: load[k]):
            while pending and load[key] < self.in_flight:
                chunk = pending.popleft()
                ref = self._send(key, chunks[chunk], completions, tasks, deadline)
                inflight[ref] = (chunk, key)
                queues.setdefault(key, deque()).append(ref)
                load[key] += 1

    def _duplicate_queued(
        self,
        chunks: list[list[int]],
        completions: Sequence[object],
        tasks: Sequence[Task],
        deadline: float | None,
        inflight: dict[Any, tuple[int, int]],
        queues: dict[int, deque[Any]],
        load: Counter[int],
        done: set[int],
        duplicated: set[int],
    ) -> None:
        """Run again, on an idle actor, a chunk that waits behind another actor's running call
        (never the running call itself: a slow item must not occupy two actors)."""
        idle = [k for k in self._slots if load[k] == 0]
        if not idle:
            return
        for ref, (chunk, key) in list(inflight.items()):
            if not idle:
                return
            queue = queues.get(key)
            if chunk in done or chunk in duplicated or not queue or queue[0] is ref:
                continue
            target = idle.pop()
            twin = self._send(target, chunks[chunk], completions, tasks, deadline)
            inflight[twin] = (chunk, target)
            queues.setdefault(target, deque()).append(twin)
            load[target] += 1
            duplicated.add(chunk)
            self.stats["duplicated_items"] += len(chunks[chunk])

    def _send(
        self,
        key: int,
        batch: list[int],
        completions: Sequence[object],
        tasks: Sequence[Task],
        deadline: float | None,
    ) -> Any:
        return self._slots[key].handle.score.remote(
            [completions[i] for i in batch], [tasks[i] for i in batch], deadline, self._item_budget_s
        )

    def _forget_finished_busy(self) -> None:
        """Drop earlier batches' calls that have ended, or whose actor is gone."""
        self._busy = {r: k for r, k in self._busy.items() if k in self._slots}
        if self._busy:
            ready, _ = self.ray.wait(list(self._busy), num_returns=len(self._busy), timeout=0)
            for ref in ready:
                self._busy.pop(ref, None)

    def _lost(self, key: int, exc: BaseException) -> None:
        """An actor failed: forget it (its node may still live; a later refresh restaffs it)."""
        slot = self._slots.get(key)
        if slot is not None:
            logger.info("scoring actor on node %s lost (%s)", slot.node[:8], type(exc).__name__)
            self._drop(key)
            self._nodes = frozenset()  # refresh at the next batch
        self.stats["lost_actors"] += 1

    def close(self) -> None:
        """Stop the actors; the last scorer on the connection this module made disconnects."""
        for key in list(getattr(self, "_slots", {})):
            self._drop(key)
        joined, self._joined = getattr(self, "_joined", None), None
        if joined is not None:
            _Connection.leave(joined, self.ray)


def _discard(queue: deque[Any] | None, ref: Any) -> None:
    if queue is not None:
        with contextlib.suppress(ValueError):
            queue.remove(ref)


__all__ = [
    "ClusterUnreachableError",
    "RayScorer",
    "ScoringActor",
    "WallsMissingError",
    "check_walls",
    "connect",
    "import_ray",
    "plan_chunks",
    "walls_here",
]
