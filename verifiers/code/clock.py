"""The clock a policy-compiled submission reads: its own elapsed time, never the host's phase.

Why: a program that can read the wall clock finely can *end* at a chosen phase of it (busy-wait
until ``now % 50 ms == v``), and the next submission on the same worker, starting a fixed time
later, reads ``v`` back: memory between submissions (and between tool episodes) through the
clock. Under the policy the only clock a submission can import is ``datetime`` (``time`` is not
allowed), so it gets CPython's pure-Python ``datetime`` (the same classes and
behaviour, run from ``datetime.py`` without its C accelerator, :func:`datetime_module`) whose
clock is :func:`now`:

* the first reading in a sandbox is the start of the current UTC day, to the microsecond;
* later readings add the time elapsed since that first one (``time.monotonic``).

A submission so sees dates as they are and durations as they pass, but no phase of the host's
clock: what it can pass on is which UTC day it ran, at most ~``wall_s / 86400`` bits per
submission. Every class of the module is pure Python, so ``type(d)`` of any value it makes leads
back here, never to the C module. Without the policy (``restricted=False``) a program reaches the
real clocks (``time``, the vDSO through ``ctypes``, ``rdtsc``): see ``docs/sandbox.md`` (What is left)
for that residual.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import time
import types
from typing import Any

DAY_S = 86_400
_START: list[float] = []
"""``[day start, monotonic at the first reading]`` in this process (a sandbox: a fork of the
worker, which never reads this clock, so every sandbox starts empty)."""


def now() -> float:
    """Seconds since the epoch as a submission sees them (see the module)."""
    if not _START:
        real = time.time()
        _START.extend((real - real % DAY_S, time.monotonic()))
    return _START[0] + (time.monotonic() - _START[1])


def _at(read: Any) -> Any:
    def at(secs: float | None = None) -> Any:
        return read(now() if secs is None else secs)

    return at


def _time_view() -> types.SimpleNamespace:
    """What ``datetime.py`` sees as its ``time`` module: every clock reading goes to :func:`now`."""
    view = types.SimpleNamespace(**{k: v for k, v in vars(time).items() if not k.startswith("__")})
    view.time = now
    view.time_ns = lambda: int(now() * 1e9)
    view.localtime, view.gmtime, view.ctime = _at(time.localtime), _at(time.gmtime), _at(time.ctime)
    view.strftime = lambda fmt, t=None: time.strftime(fmt, time.localtime(now()) if t is None else t)
    return view


def _pure_datetime() -> types.ModuleType:
    """``datetime.py`` executed without ``_datetime`` (it then keeps its Python classes), not
    registered in ``sys.modules``, with :func:`_time_view` as its ``_time``."""
    spec = importlib.util.find_spec("datetime")
    if spec is None or spec.loader is None:
        raise ImportError("the datetime module's source is not available")
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("_datetime")
    sys.modules["_datetime"] = None  # type: ignore[assignment] - makes its ``from _datetime import *`` fail
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["_datetime"]
        else:
            sys.modules["_datetime"] = saved
    if not isinstance(vars(module.datetime).get("now"), classmethod):  # the C type has a descriptor
        raise ImportError("datetime did not load as pure Python")
    module._time = _time_view()  # type: ignore[attr-defined]
    return module


@functools.cache
def datetime_module() -> types.ModuleType:
    """The ``datetime`` module policy-compiled programs import: made once per worker, before its
    walls (:func:`.policy.preload_modules`), so every sandbox inherits it ready."""
    return _pure_datetime()
