"""The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on Code".

Sampling exactly k completions and checking whether one passes has high variance; drawing n >= k
samples, counting c correct ones and computing the probability that a random k-subset holds at
least one correct sample, ``1 - C(n-c, k) / C(n, k)``, is unbiased and uses every sample.
"""

from __future__ import annotations

from collections.abc import Iterable

from rlvr_gym.error import InvalidArgumentError, InvalidTypeError


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n is correct.

    Computed as the product form ``1 - prod_{i=n-c+1}^{n} (1 - k/i)`` (no huge binomials).
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidTypeError(f"{name} must be an int, got {type(value).__name__}")
    if n < 1 or k < 1:
        raise InvalidArgumentError(f"n and k must be >= 1, got n={n}, k={k}")
    if not 0 <= c <= n:
        raise InvalidArgumentError(f"c (correct samples) must lie in [0, n={n}], got {c}")
    if k > n:
        raise InvalidArgumentError(f"pass@{k} needs at least k samples per task, got n={n}")
    if n - c < k:
        return 1.0
    failure = 1.0
    for i in range(n - c + 1, n + 1):
        failure *= 1.0 - k / i
    return 1.0 - failure


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float:
    """pass@k averaged over tasks, each given as ``(n samples, c correct)``."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    if not values:
        raise InvalidArgumentError("mean_pass_at_k needs at least one task")
    return sum(values) / len(values)
