"""The tiny-model demo: the settings under which GRPO visibly teaches the tiny offline model.

``rlvr-gym train`` without ``--model`` runs :func:`demo_config`; a Python caller gets the same
run from ``train(config=demo_config("arith"))``. These are demo settings, not defaults:
``RunConfig()`` itself stays a plain GRPO run.
"""

from __future__ import annotations

import itertools
from typing import Any

from rlvr_gym import envs
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.console import announce

REFERENCE_SAMPLE = 256
"""Reference answers measured to size the demo's completion length."""

TINY_DEMO: dict[str, Any] = {
    "warm_start_steps": 200,
    "learning_rate": 1e-3,
    "beta": 0.04,
    "num_generations": 16,
    "prompts_per_step": 4,
    "max_completion_length": 8,
    "max_steps": 400,
}
"""Settings under which GRPO visibly teaches the tiny offline model a built-in env on a CPU in
minutes. The 200-step supervised warm start teaches the answer tag and when to stop but leaves
accuracy at about chance on ``TINY_DEMO_ENV['arith']`` (first fifth 0.16 at seed 0); GRPO then
raises it (last fifth 0.49; 0.62 before the 2026-11-24 changes, the trajectory being sensitive
to floating-point order). A longer warm start already solves the task (240 steps: 0.43 in the
first fifth), a shorter or answer-free one leaves GRPO flat at chance within 500 steps. The KL
term (``beta``) keeps the answer format from drifting; without it lr >= 2e-3 broke the format."""

TINY_DEMO_ENV: dict[str, dict[str, Any]] = {
    "arith": {
        "num_steps": 1,
        "max_operand": 5,
        "operations": "+",
        "word_problems": False,
        "proximity_weight": 0.0,
    },
}
"""Env settings of the tiny-model demo (``--env-arg`` still wins): ``a + b`` with a, b in 1..5,
no shaped proximity reward (it pays the most common answer whatever the question, so the model
collapses onto one answer). The env's own defaults (two-step word problems up to 20) stay: the
2-layer, 64-wide model's accuracy on them barely moves (0.00 -> 0.02 over 150 steps)."""


TINY_DEMO_TOOLS: dict[str, Any] = {
    "warm_start_steps": 300,
    "num_generations": 4,
    "prompts_per_step": 2,
    "max_completion_length": 96,
    "max_prompt_length": 4096,
}
"""What a tool env's demo changes (on top of :data:`TINY_DEMO`): the warm start is on reference
episodes (a tool call, then the answer), which need room to be written, and prompts carry the
tools' schemas (~450 tokens to the tiny model). ``train --env gsm8k-python --max-steps 2``, seed
0, measured 2026-11-27: 300 steps give 0.62 and 0.75 tool calls an episode in TRL's sampled
rollouts; 120 steps gave 0.00 (greedy, that model writes a valid call; sampled at temperature 1
its calls break)."""


TINY_DEMO_RUN: dict[str, dict[str, Any]] = {
    "big-add": {
        "warm_start_steps": 800,
        "warm_start_tool_fraction": 0.6,
        "num_generations": 8,
        "prompts_per_step": 2,
        "max_completion_length": 64,
        "learning_rate": 3e-4,
        "beta": 0.04,
        "max_steps": 100,
        "gradient_checkpointing": False,
    },
}
"""Run settings of one env's demo, over :data:`TINY_DEMO` and :data:`TINY_DEMO_TOOLS`. ``big-add``
(measured 2026-11-27; accuracy and tool calls an episode in TRL's sampled rollouts, first fifth
of the GRPO steps -> last fifth): the warm start is on a mix, 60% reference episodes (the call,
then the result) and 40% direct answers (the gold answer, no call; sampled, the 2-layer model's
own sums are wrong). It leaves a policy that calls in ~70% of episodes and copies well when it
does, so each group holds calling rollouts (often right) and direct ones (wrong): one large,
low-variance decision for GRPO to select. Seeds 0/1/2/3: accuracy 0.47 -> 0.65, 0.46 -> 0.71,
0.63 -> 0.85, 0.63 -> 0.88; calls 0.73 -> 0.93, 0.72 -> 0.94, 0.70 -> 0.93, 0.78 -> 0.96.

With every warm-start episode calling (``warm_start_tool_fraction`` 1, 500 steps, the earlier
demo) the policy already called in ~90% of episodes and GRPO had little to select: 0.67 -> 0.72,
0.64 -> 0.66, 0.26 -> 0.34 over 100 steps; over 300 steps seed 0 climbed 0.65 -> 0.78 and seed 2
stayed flat (0.28 -> 0.26). A higher GRPO lr (6e-4) collapsed first and recovered to about the
warm start's level. The copy of the tool's result into the answer is learnt abruptly after ~450
reference episodes' worth of steps (16 a step): 500 steps at a 50% mix never learnt it at seed
0 (accuracy 0.00 throughout), nor did a doubled warm-start lr (6e-3; 0.00 over the 30 GRPO
steps run), hence 800 steps at 60% (~480 steps of calling episodes). The reference episode is 58 tokens, so ``max_completion_length``
stays above that (at 56 the answer turn is cut). Without gradient checkpointing (a 2-layer model
needs no memory saving) the whole run costs 150-180 CPU-s here (one torch thread; the warm start
runs the shared prompt once a batch, see ``trainers/warm_start.py``)."""


def is_tool_env(env_id: str) -> bool:
    """Whether ``env_id`` registers a tool env (a :class:`~rlvr_gym.envs.MultiTurnEnv` class)."""
    from rlvr_gym import envs

    try:
        factory = envs.spec(env_id).load()
    except envs.RegistryError:
        return False
    return isinstance(factory, type) and issubclass(factory, envs.MultiTurnEnv)


def demo_config(env_id: str, **settings: Any) -> RunConfig:
    """The tiny-model demo on ``env_id``: :data:`TINY_DEMO` (and :data:`TINY_DEMO_TOOLS` for a
    tool env) and the env's :data:`TINY_DEMO_ENV` settings, with ``settings`` (any
    :class:`RunConfig` field; ``env_kwargs`` merged) winning.

    Unless ``max_completion_length`` is given (or the env is a tool env, whose preset sizes it),
    it is sized for the env: at least every sampled reference answer in the tiny model's tokens
    (:func:`fitted_completion_length`), so an env whose answers are longer than
    :data:`TINY_DEMO`'s 8 tokens (countdown) can earn reward at all.
    """
    env_kwargs = {**TINY_DEMO_ENV.get(env_id, {}), **settings.pop("env_kwargs", {})}
    tools = TINY_DEMO_TOOLS if is_tool_env(env_id) else {}
    if "max_completion_length" not in settings and not tools:
        preset = TINY_DEMO["max_completion_length"]
        fitted = fitted_completion_length(env_id, env_kwargs)
        if fitted > preset:
            announce(
                f"max_completion_length {fitted} (the demo's {preset} is too short for {env_id}'s reference "
                "answers; --max-completion-length sets it)"
            )
            settings["max_completion_length"] = fitted
    preset = {**TINY_DEMO, **tools, **TINY_DEMO_RUN.get(env_id, {})}
    return RunConfig(**{**preset, **settings, "env_id": env_id, "env_kwargs": env_kwargs})



def fitted_completion_length(env_id: str, env_kwargs: dict[str, Any], tasks: int = REFERENCE_SAMPLE) -> int:
    """Tokens the longest of ``tasks`` reference answers of the env takes in the tiny model's
    tokenizer (built as ``tiny-model`` builds it; generation stops at ``</answer>``)."""
    from rlvr_gym.trainers.tiny_model import env_tokenizer

    env = envs.make(env_id, **env_kwargs)
    tokenizer, _ = env_tokenizer(env)
    lengths = []
    for row in itertools.islice(env.tasks(env.splits[0]), tasks):
        try:
            reference = env.reference_completion(row)
        except NotImplementedError:  # an env without reference answers: nothing to size by
            continue
        lengths.append(len(tokenizer(reference, add_special_tokens=False)["input_ids"]))
    return max(lengths, default=0) + 1  # and the end-of-text token where there is no closing tag
