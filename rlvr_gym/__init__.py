"""rlvr-gym: verifiable-reward environments for training language models with GRPO.

>>> import rlvr_gym as rg
>>> env = rg.make("arith")
>>> obs, info = env.reset(seed=0)
>>> obs, reward, terminated, truncated, info = env.step("<answer>42</answer>")

The package installs one import name; its parts are ``rlvr_gym.verifiers`` ← ``rlvr_gym.envs``
← ``rlvr_gym.backends`` ← ``rlvr_gym.trainers`` (each imports only those to its left). The names
below are resolved on first use, so ``import rlvr_gym`` loads neither torch, sympy nor
RestrictedPython.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlvr_gym.error import Error

__version__ = "0.1.0"

# name -> module that defines it; imported when the name is first read.
_LAZY: dict[str, str] = {
    "make": "rlvr_gym.envs",
    "make_vec": "rlvr_gym.envs",
    "register": "rlvr_gym.envs",
    "spec": "rlvr_gym.envs",
    "registry": "rlvr_gym.envs",
    "check_env": "rlvr_gym.envs",
    "audit": "rlvr_gym.envs.audit",
    "AuditReport": "rlvr_gym.envs.audit",
    "AuditFailedError": "rlvr_gym.envs.audit",
    "Env": "rlvr_gym.envs",
    "SingleTurnEnv": "rlvr_gym.envs",
    "MultiTurnEnv": "rlvr_gym.envs",
    "Verdict": "rlvr_gym.verifiers.verdict",
    "Reason": "rlvr_gym.verifiers.verdict",
    "Rubric": "rlvr_gym.verifiers.rubric",
    "RunConfig": "rlvr_gym.backends.config",
    "LoraSettings": "rlvr_gym.backends.config",
    "train": "rlvr_gym.trainers.train",
    "evaluate": "rlvr_gym.trainers.evaluate",
    "EvalConfig": "rlvr_gym.trainers.eval_config",
}
_SUBPACKAGES = ("envs", "verifiers", "backends", "trainers", "error")
# public modules deeper down, reachable as rlvr_gym.<name> (imported on first use)
_MODULES = {"trl_adapter": "rlvr_gym.backends.trl_adapter"}

if TYPE_CHECKING:
    from rlvr_gym import backends, envs, error, trainers, verifiers
    from rlvr_gym.backends import trl_adapter
    from rlvr_gym.backends.config import LoraSettings, RunConfig
    from rlvr_gym.envs import (
        Env,
        MultiTurnEnv,
        SingleTurnEnv,
        check_env,
        make,
        make_vec,
        register,
        registry,
        spec,
    )
    from rlvr_gym.envs.audit import AuditFailedError, AuditReport, audit
    from rlvr_gym.trainers.eval_config import EvalConfig
    from rlvr_gym.trainers.evaluate import evaluate
    from rlvr_gym.trainers.train import train
    from rlvr_gym.verifiers.rubric import Rubric
    from rlvr_gym.verifiers.verdict import Reason, Verdict


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"rlvr_gym.{name}")
    elif name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    else:
        raise AttributeError(f"module 'rlvr_gym' has no attribute {name!r}")
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBPACKAGES, *_MODULES})


__all__ = [
    "AuditFailedError",
    "AuditReport",
    "Env",
    "Error",
    "EvalConfig",
    "LoraSettings",
    "MultiTurnEnv",
    "Reason",
    "Rubric",
    "RunConfig",
    "SingleTurnEnv",
    "Verdict",
    "__version__",
    "audit",
    "backends",
    "check_env",
    "envs",
    "error",
    "evaluate",
    "make",
    "make_vec",
    "register",
    "registry",
    "spec",
    "train",
    "trainers",
    "trl_adapter",
    "verifiers",
]
