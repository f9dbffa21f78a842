"""``run_python``: the code sandbox as a tool — run a program, get back its capped output.

The same walls as :class:`~rlvr_gym.verifiers.code.CodeVerifier` (the RestrictedPython filter, a fresh
sandboxed process per call with its own limits, no network, a throw-away directory), through the
same :class:`~rlvr_gym.verifiers.code.SandboxPool` and one harness kind, ``run``: the program runs once as a
script and the judge hands back what it printed instead of comparing it. Stateless by design:
every call is a new process, so nothing one call does (a patched builtin, a file, a thread) can
reach the next call, another episode or the judge that scores the final answer; a model that
needs earlier results re-runs or prints them (programs here are short and cost milliseconds).

What comes back is for the model to read, so it is bounded and scrubbed: at most
``ToolLimits.output_chars`` of output (the program is stopped when it prints more), the exception
as ``Name: message`` (no traceback), and every path-like string replaced by ``<path>`` so no
host path leaks into a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from rlvr_gym.error import Error, InvalidArgumentError
from rlvr_gym.verifiers.code.pool import SandboxPool, default_pool
from rlvr_gym.verifiers.code.sandbox import Limits

Status = Literal["ok", "error", "timeout", "unsafe", "syntax", "output_limit", "sandbox_error"]

TOOL_LIMITS = Limits(wall_s=5.0, cpu_s=5, memory_bytes=512 << 20, output_bytes=4000)
"""Per call: 5 s wall and CPU, 512 MiB, 4,000 characters of output."""
ERROR_CHARS = 300
_PATH = re.compile(r"(?<![\w)\]])/[^\s'\",:;)\]]+")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One call's outcome. ``status`` is what happened; ``output`` what the program printed
    (capped, scrubbed); ``error`` the exception, policy refusal or limit that stopped it."""

    status: Status
    output: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def render(self) -> str:
        """The text a model sees as the tool's answer."""
        if self.status == "ok":
            return self.output if self.output else "(no output)"
        head = f"{self.output}\n" if self.output else ""
        return f"{head}[{self.status}] {self.error or ''}".rstrip()


def scrub(text: str, limit: int) -> str:
    """Program-made text as it may reach a prompt: at most ``limit`` chars, paths replaced."""
    return _PATH.sub("<path>", text[: limit * 2])[:limit]


class PythonTool:
    """Runs model-written programs in the sandbox pool, one fresh sandboxed process per call.

    ``restricted=True`` keeps the RestrictedPython first filter (imports limited to the
    verifier's allow-list); the OS walls hold either way.
    """

    def __init__(
        self, *, limits: Limits | None = None, pool: SandboxPool | None = None, restricted: bool = True
    ) -> None:
        self.limits = limits or TOOL_LIMITS
        if self.limits.output_bytes < 1:
            raise InvalidArgumentError(f"output_bytes must be >= 1, got {self.limits.output_bytes}")
        self._pool = pool
        self.restricted = restricted

    @property
    def pool(self) -> SandboxPool:
        return self._pool if self._pool is not None else default_pool()

    def job(self, code: str, stdin: str = "") -> dict[str, Any]:
        """The pool job for one call (the ``run`` harness kind)."""
        return {
            "source": code,
            "tests": {"kind": "run", "cases": [{"stdin": stdin}]},
            "limits": asdict(self.limits),
            "restricted": self.restricted,
        }

    def run(self, code: object, stdin: str = "") -> ToolResult:
        """Run one program (see :meth:`run_batch`)."""
        return self.run_batch([code], [stdin])[0]

    def run_batch(self, codes: Sequence[object], stdins: Sequence[str] | None = None) -> list[ToolResult]:
        """Run programs in parallel on the pool, one :class:`ToolResult` each, in order.

        Never raises on a program: a non-string is a ``syntax`` result, a sandbox failure a
        ``sandbox_error`` result (our fault, which envs surface as an unscored turn).
        """
        stdins = list(stdins) if stdins is not None else [""] * len(codes)
        if len(stdins) != len(codes):
            raise InvalidArgumentError(f"run_batch got {len(codes)} programs for {len(stdins)} stdins")
        results: list[ToolResult | None] = [None] * len(codes)
        jobs, where = [], []
        for index, (code, stdin) in enumerate(zip(codes, stdins, strict=True)):
            if not isinstance(code, str) or not isinstance(stdin, str):
                results[index] = ToolResult("syntax", "", f"code must be text, got {type(code).__name__}")
                continue
            jobs.append(self.job(code, stdin))
            where.append(index)
        try:
            outcomes = self.pool.run(jobs)
        except Error as exc:  # a closed or broken pool is our failure, reported per call
            outcomes = [{"status": "error", "errors": [f"{type(exc).__name__}: {exc}"]}] * len(jobs)
        for index, outcome in zip(where, outcomes, strict=True):
            results[index] = self.result_of(outcome)
        return [r for r in results if r is not None]

    def result_of(self, outcome: dict[str, Any]) -> ToolResult:
        """A worker outcome of a ``run`` job as a :class:`ToolResult`."""
        cap = self.limits.output_bytes
        status = outcome.get("status")
        errors = "; ".join(str(e) for e in outcome.get("errors", []))
        if status in ("unsafe", "syntax"):
            return ToolResult(status, "", scrub(errors, ERROR_CHARS))
        if status != "ran":
            return ToolResult("sandbox_error", "", scrub(errors or "the sandbox failed", ERROR_CHARS))
        output = scrub(str(outcome.get("output") or ""), cap)
        failure = "; ".join(outcome.get("failures", []))
        if outcome.get("timed_out"):
            return ToolResult("timeout", output, f"stopped after {self.limits.wall_s:g} s")
        if "OutputLimitExceeded" in failure:
            return ToolResult("output_limit", output, f"output cut at {cap} characters")
        if outcome.get("passed") == 1:
            return ToolResult("ok", output)
        return ToolResult("error", output, scrub(failure or "the program failed", ERROR_CHARS))

    def with_limits(self, **changes: Any) -> PythonTool:
        """A tool on the same pool with some limits changed (``wall_s=2``, ``output_bytes=1000``)."""
        return PythonTool(limits=replace(self.limits, **changes), pool=self._pool, restricted=self.restricted)

    def close(self) -> None:
        """Stop the pool's workers (they restart on the next call)."""
        self.pool.release()

    def __repr__(self) -> str:
        return f"PythonTool(limits={self.limits}, restricted={self.restricted})"
