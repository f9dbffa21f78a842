"""Backend-neutral GRPO runs: configuration, training, evaluation, metrics and the CLI."""
