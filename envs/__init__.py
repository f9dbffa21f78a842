"""Environments: a Gymnasium-style registry of text envs with verifiable rewards.

Every env is an :class:`Env`; :class:`SingleTurnEnv` scores one completion per episode,
:class:`MultiTurnEnv` plays tool calls turn by turn.

>>> from rlvr_gym import envs
>>> env = envs.make("arith")
>>> obs, info = env.reset(seed=0)
>>> obs, reward, terminated, truncated, info = env.step("<answer>42</answer>")
"""

from rlvr_gym.envs.checker import CHECK_NAMES, EnvCheckError, check_env
from rlvr_gym.envs.env import Env, EnvStateError, SingleTurnEnv
from rlvr_gym.envs.reasoning_gym_bridge import register_all as _register_reasoning_gym
from rlvr_gym.envs.registration import (
    ENTRY_POINT_GROUP,
    DuplicateEnvError,
    EnvArgumentError,
    EnvSpec,
    InvalidEnvIdError,
    RegistryError,
    UnknownEnvError,
    deregister,
    gymnasium_id,
    latest_version,
    load_plugins,
    make,
    register,
    registry,
    spec,
)
from rlvr_gym.envs.spaces import AnyText, ChatMessages
from rlvr_gym.envs.tool_env import Final, MultiTurnEnv, parse_tool_calls, tool
from rlvr_gym.envs.vector import make_vec

# A change to an env's tasks or scoring registers a new -vN; `make("gsm8k")` means the latest.
register("arith-v0", "rlvr_gym.envs.arith:ArithEnv")
register("gsm8k-v0", "rlvr_gym.envs.gsm8k:GSM8KEnv")
register("math500-v0", "rlvr_gym.envs.math500:MATH500Env")
register("humaneval-v0", "rlvr_gym.envs.humaneval:HumanEvalEnv")
register("mbpp-v0", "rlvr_gym.envs.mbpp:MbppEnv")  # the real MBPP: hub or a local copy
register("mbpp-sample-v0", "rlvr_gym.envs.mbpp:MbppSampleEnv")  # 12 tasks we wrote, offline
register("gsm8k-python-v0", "rlvr_gym.envs.python_tool_envs:GSM8KPythonEnv")
register("math500-python-v0", "rlvr_gym.envs.python_tool_envs:MATH500PythonEnv")
register("big-add-v0", "rlvr_gym.envs.big_add:BigAddEnv")  # the tool env a tiny model learns
register("humaneval-feedback-v0", "rlvr_gym.envs.humaneval_feedback:HumanEvalFeedbackEnv")
register("countdown-v0", "rlvr_gym.envs.countdown:CountdownEnv")
register("ifeval-v0", "rlvr_gym.envs.ifeval:IFEvalEnv")
register(
    "ifeval-bench-v0",
    "rlvr_gym.envs.instructions:InstructionsEnv",
    description="IFEval's 541 prompts as published (google/IFEval), scored as IFEval scores them",
)
# Your own data by column mapping, no class: make("math", data="my.jsonl", question=..., answer=...)
register("instructions-v0", "rlvr_gym.envs.instructions:InstructionsEnv")
register("math-v0", "rlvr_gym.envs.custom:MathDataEnv")
register("code-v0", "rlvr_gym.envs.custom:CodeDataEnv")
# Registered with or without the extra: without it, `envs` lists them saying so and make() names
# the install line (an id that was never registered could only say "no env registered").
_register_reasoning_gym()
load_plugins()

__all__ = [
    "CHECK_NAMES",
    "ENTRY_POINT_GROUP",
    "AnyText",
    "ChatMessages",
    "DuplicateEnvError",
    "Env",
    "EnvArgumentError",
    "EnvCheckError",
    "EnvSpec",
    "EnvStateError",
    "Final",
    "InvalidEnvIdError",
    "MultiTurnEnv",
    "RegistryError",
    "SingleTurnEnv",
    "UnknownEnvError",
    "check_env",
    "deregister",
    "gymnasium_id",
    "latest_version",
    "load_plugins",
    "make",
    "make_vec",
    "parse_tool_calls",
    "register",
    "registry",
    "spec",
    "tool",
]
