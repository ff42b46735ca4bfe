"""Small, dependency-free statistics for eval results.

Every rate an eval reports is an estimate from a handful of trials, so it comes with a Wilson
score interval (well-behaved at 0% and 100%, unlike the normal approximation), and consistency
across repeated trials is reported as pass^k (tau-bench's estimator: the chance that k trials
drawn without replacement from a case's n trials all pass, averaged over cases).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054  # two-sided 5%
Z_80_POWER = 0.8416212335729143  # one-sided 20%: 80% power
ALPHA = 0.05


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


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: under "no difference" each discordant pair is a fair coin.

    b = pairs where A passed and B failed, c = the reverse; p = min(1, 2·P[X ≤ min(b, c)]), X ~ Bin(b+c, 1/2).
    Computed with integers, so it is exact even for small counts where the chi-square version is not.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of already sorted values."""
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def paired_bootstrap(
    per_case: Sequence[Sequence[tuple[bool, bool]]], resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> Interval | None:
    """Percentile interval of the pass-rate difference B−A, resampling whole cases with replacement.

    `per_case` holds, for each case, its (A passed, B passed) pairs. Cases are the unit of sampling
    because trials of one case share its difficulty. None when there is nothing to resample.
    """
    cases = [(sum(int(b) - int(a) for a, b in pairs), len(pairs)) for pairs in per_case if pairs]
    if not cases or resamples < 1:
        return None
    rng = random.Random(seed)
    estimates: list[float] = []
    for _ in range(resamples):
        drawn = [cases[rng.randrange(len(cases))] for _ in cases]
        estimates.append(sum(d for d, _ in drawn) / sum(n for _, n in drawn))
    estimates.sort()
    tail = (1 - level) / 2
    return Interval(_quantile(estimates, tail), _quantile(estimates, 1 - tail))


def trials_needed(b: int, c: int, pairs: int) -> int | None:
    """Approximate pairs McNemar needs to detect the observed difference at alpha 0.05 with 80% power.

    Connor's normal approximation with the observed discordant proportions:
    n = (z_a·√ψ + z_b·√(ψ − δ²))² / δ², ψ = (b+c)/pairs, δ = (c−b)/pairs. None when δ = 0.
    """
    if pairs <= 0 or b == c:
        return None
    psi, delta = (b + c) / pairs, (c - b) / pairs
    root = Z_95 * math.sqrt(psi) + Z_80_POWER * math.sqrt(max(0.0, psi - delta * delta))
    return math.ceil(root * root / (delta * delta))
