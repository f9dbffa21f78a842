"""Backend-neutral GRPO runs: configuration, training, evaluation, metrics and the CLI."""

from trainers.config import TINY_DEMO, GRPOConfig, LoraSettings
from trainers.evaluate import evaluate
from trainers.train import train

__all__ = ["TINY_DEMO", "GRPOConfig", "LoraSettings", "evaluate", "train"]
