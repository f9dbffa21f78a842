"""The unbiased pass@k estimator against hand-computed values and its combinatorial definition."""

from __future__ import annotations

import itertools
import math

import pytest

from rlvr_gym.trainers.passk import mean_pass_at_k, pass_at_k

# (n, c, k, value worked out by hand from 1 - C(n-c, k) / C(n, k))
HAND = [
    (5, 2, 1, 1 - 3 / 5),  # 0.4
    (5, 2, 2, 1 - 3 / 10),  # C(3,2)=3, C(5,2)=10
    (5, 2, 3, 1 - 1 / 10),  # C(3,3)=1, C(5,3)=10
    (5, 2, 4, 1.0),  # fewer than k wrong samples: every k-subset holds a correct one
    (4, 0, 2, 0.0),
    (4, 4, 1, 1.0),
    (10, 3, 5, 1 - 21 / 252),  # C(7,5)=21, C(10,5)=252
    (200, 1, 1, 1 / 200),
]


@pytest.mark.parametrize(("n", "c", "k", "expected"), HAND)
def test_hand_computed_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_matches_the_subset_definition_by_enumeration():
    """pass@k is the fraction of k-subsets of the n samples that contain a correct one."""
    for n in range(1, 7):
        for c in range(n + 1):
            samples = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(samples, k))
                expected = sum(any(s) for s in subsets) / len(subsets)
                assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)


def test_large_n_is_stable_and_matches_binomials():
    expected = 1 - math.comb(1000 - 37, 10) / math.comb(1000, 10)
    assert pass_at_k(1000, 37, 10) == pytest.approx(expected, rel=1e-12)


def test_mean_over_tasks():
    assert mean_pass_at_k([(5, 2), (4, 0), (4, 4)], 1) == pytest.approx((0.4 + 0.0 + 1.0) / 3)


@pytest.mark.parametrize(
    ("n", "c", "k", "error"),
    [
        (3, 1, 4, ValueError),
        (3, 4, 1, ValueError),
        (0, 0, 1, ValueError),
        (3, -1, 1, ValueError),
        (3.0, 1, 1, TypeError),
    ],
)
def test_bad_arguments_are_refused(n, c, k, error):
    with pytest.raises(error):
        pass_at_k(n, c, k)


def test_mean_of_nothing_is_refused():
    with pytest.raises(ValueError, match="at least one task"):
        mean_pass_at_k([], 1)
