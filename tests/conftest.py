"""Shared test set-up: offline data for envs that would otherwise read the Hugging Face hub."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples in every run unless asked to explore: a failure in CI is then
# one anybody can reproduce, and a landing is never refused by a draw nobody else can repeat.
# Explore (fresh draws, more of them) with RLVR_GYM_HYPOTHESIS=explore; what it finds becomes an
# @example.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", max_examples=1000)
settings.load_profile(os.environ.get("RLVR_GYM_HYPOTHESIS", "repeatable"))

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# Envs with real data sets read RLVR_GYM_DATA_DIR before the hub; CI has no hub access.
if SHARED_DATA.is_dir():
    os.environ.setdefault("RLVR_GYM_DATA_DIR", str(SHARED_DATA))

# Every Ray cluster a test starts is on this machine: Ray keeps its nodes and drivers on 127.0.0.1
# only with this switch set before it is imported (else it advertises the interface address).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

# DeepSpeed JIT-compiles its cpu_adam op (~100 s) on first use; one cache folder inside the
# repo's ignored area makes that happen at most once per checkout, not once per test or process.
os.environ.setdefault(
    "TORCH_EXTENSIONS_DIR", str(Path(__file__).resolve().parents[1] / ".cache" / "torch_extensions")
)


@pytest.fixture(scope="session")
def warm_arith_model(tmp_path_factory):
    """The tiny offline model after a 150-step warm start on arith, built once per test session.

    Warm, so GRPO groups have reward variance and gradients; shared, because building it costs
    a minute on a busy 2-core machine and several test modules train from it.
    """
    pytest.importorskip("transformers", reason="needs rlvr-gym[trl]")
    from rlvr_gym import envs
    from rlvr_gym.trainers.tiny_model import build_tiny_model
    from rlvr_gym.trainers.warm_start import warm_start

    env = envs.make("arith")
    tiny = build_tiny_model(tmp_path_factory.mktemp("tiny"), env)
    return warm_start(tiny, env, tmp_path_factory.mktemp("warm"), steps=150)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test that needs the warm-started model (or the evaluate fixture's trained model) is
    slow: building it costs one to several minutes on 2 cores, so plain ``pytest`` (the fast tier)
    must not pay it. Runs before ``-m`` deselects."""
    for item in items:
        if {"warm_arith_model", "arith_model"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
