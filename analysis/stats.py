"""Small, dependency-free statistics for eval results.

Every rate an eval reports is an estimate from a handful of trials, so it comes with a Wilson
score interval (well-behaved at 0% and 100%, unlike the normal approximation), and consistency
across repeated trials is reported as pass^k (tau-bench's estimator: the chance that k trials
drawn without replacement from a case's n trials all pass, averaged over cases).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> Interval | None:
    """Wilson score interval for a binomial proportion; None when there are no trials."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in [0, {trials}], got {successes}")
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def pass_hat_k(per_case: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean over cases of C(c, k) / C(n, k), for (c passes, n trials) per case.

    Cases with fewer than k scored trials are left out; None when no case has k trials.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    values = [math.comb(c, k) / math.comb(n, k) for c, n in per_case if n >= k]
    return sum(values) / len(values) if values else None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
