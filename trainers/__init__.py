"""Backend-neutral GRPO runs: training, evaluation, reports and the CLI.

The run description (:class:`RunConfig`) lives in :mod:`rlvr_gym.backends.config`, below both
layers, and is re-exported here.
"""

from rlvr_gym.backends.config import LoraSettings, RunConfig
from rlvr_gym.trainers.demo import TINY_DEMO, demo_config
from rlvr_gym.trainers.eval_config import EvalConfig
from rlvr_gym.trainers.evaluate import evaluate
from rlvr_gym.trainers.train import train

__all__ = ["TINY_DEMO", "EvalConfig", "LoraSettings", "RunConfig", "demo_config", "evaluate", "train"]
