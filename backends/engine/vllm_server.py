"""The lifecycle of a ``trl vllm-serve`` generation server: start, wait for health, watch, tear down.

Why a class of our own: TRL's server mode expects a server someone else started. A training run
that starts one must not leave it (and its worker processes) behind when training ends or fails,
and must fail with the server's own last words when the server dies. The server runs in its own
process group so teardown reaches every process it spawned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from rlvr_gym.error import (
    InvalidArgumentError,
    VLLMServerError,  # noqa: F401 - defined with the whole tree
)


def trl_vllm_serve_command(
    model: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    tensor_parallel_size: int = 1,
    data_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
) -> list[str]:
    """The ``trl vllm-serve`` command line for ``model``."""
    command = [
        "trl",
        "vllm-serve",
        "--model",
        str(model),
        "--host",
        host,
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(tensor_parallel_size),
        "--data-parallel-size",
        str(data_parallel_size),
        "--gpu-memory-utilization",
        str(gpu_memory_utilization),
    ]
    if max_model_len is not None:
        command += ["--max-model-len", str(max_model_len)]
    return command


class VLLMServer:
    """A server process answering ``GET /health`` once ready (the endpoint TRL's VLLMClient polls).

    Use as a context manager: ``__enter__`` starts it and waits for health, ``__exit__`` tears it
    down whatever happened inside. ``gpus`` sets ``CUDA_VISIBLE_DEVICES`` for the server alone.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        gpus: Sequence[int] | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout_s: float = 600.0,
        log_path: str | Path | None = None,
    ) -> None:
        if startup_timeout_s <= 0:
            raise InvalidArgumentError(f"startup_timeout_s must be > 0, got {startup_timeout_s}")
        self.command = [str(part) for part in command]
        self.host, self.port = host, port
        self.gpus = list(gpus) if gpus is not None else None
        self.env = dict(env) if env is not None else None
        self.startup_timeout_s = startup_timeout_s
        self.log_path = (
            Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="vllm-serve-", suffix=".log")[1])
        )
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        """Start the server and block until ``/health`` answers 200; a failure tears it down."""
        if self.process is not None:
            raise VLLMServerError("server already started")
        env = dict(os.environ if self.env is None else self.env)
        if self.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, self.gpus))
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            self.check()
            if self.healthy():
                return
            time.sleep(0.1)
        raise VLLMServerError(
            f"vLLM server {self.url} not healthy after {self.startup_timeout_s:.0f} s: {self._log_tail()}"
        )

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def check(self) -> None:
        """Raise :class:`VLLMServerError` with the server's exit code and log tail if it has exited."""
        if self.process is None:
            raise VLLMServerError("server not started")
        code = self.process.poll()
        if code is not None:
            raise VLLMServerError(
                f"vLLM server ({' '.join(self.command[:3])} ...) exited with code {code}: {self._log_tail()}"
            )

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the server's whole process group, SIGKILL it after ``grace_s``; idempotent."""
        if self.process is None:
            return
        pgid = self.process.pid  # start_new_session: the group id is the server's pid
        _signal_group(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(pgid, signal.SIGKILL)
            self.process.wait(timeout=10)
        # Children the leader left behind (it exited first) get the same end.
        deadline = time.monotonic() + 10
        while _group_alive(pgid) and time.monotonic() < deadline:
            _signal_group(pgid, signal.SIGKILL)
            time.sleep(0.05)

    def _log_tail(self, chars: int = 2000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return text[-chars:].strip() or "(empty log)"

    def __enter__(self) -> VLLMServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
