"""Environments: a Gymnasium-style registry of single-step text envs with verifiable rewards.

>>> import envs
>>> env = envs.make("arith")
>>> obs, info = env.reset(seed=0)
>>> obs, reward, terminated, truncated, info = env.step("<answer>42</answer>")
"""

from envs.checker import CHECK_NAMES, EnvCheckError, check_env
from envs.env import EnvStateError, SingleTurnEnv
from envs.registration import (
    ENTRY_POINT_GROUP,
    DuplicateEnvError,
    EnvArgumentError,
    EnvSpec,
    InvalidEnvIdError,
    RegistryError,
    UnknownEnvError,
    deregister,
    load_plugins,
    make,
    register,
    registry,
    spec,
)
from envs.spaces import AnyText, ChatMessages

register("arith", "envs.arith:ArithEnv")
register("gsm8k", "envs.gsm8k:GSM8KEnv")
register("math500", "envs.math500:MATH500Env")
register("humaneval", "envs.humaneval:HumanEvalEnv")
register("mbpp", "envs.mbpp:MbppEnv")
load_plugins()

__all__ = [
    "CHECK_NAMES",
    "ENTRY_POINT_GROUP",
    "AnyText",
    "ChatMessages",
    "DuplicateEnvError",
    "EnvArgumentError",
    "EnvCheckError",
    "EnvSpec",
    "EnvStateError",
    "InvalidEnvIdError",
    "RegistryError",
    "SingleTurnEnv",
    "UnknownEnvError",
    "check_env",
    "deregister",
    "load_plugins",
    "make",
    "register",
    "registry",
    "spec",
]
