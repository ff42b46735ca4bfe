"""Small, dependency-free statistics for eval results.

Every rate an eval reports is an estimate from a handful of trials, so it comes with a Wilson
score interval (well-behaved at 0% and 100%, unlike the normal approximation), and consistency
across repeated trials is reported as pass^k (tau-bench's estimator: the chance that k trials
drawn without replacement from a case's n trials all pass, averaged over cases).

Comparisons of two arms count one vote per case (`analysis.paired`), so the tests here take counts
of cases: the exact sign test, the cases a sign test needs, Holm's correction when several
candidates are tested against one base, and one-sided upper bounds for a harm rate (a candidate is
non-inferior when the bound stays under the rate allowed).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

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


def sign_test(plus: int, minus: int) -> float:
    """Two-sided exact sign test: under "no difference" each non-tied vote is a fair coin.

    p = min(1, 2·P[X ≤ min(plus, minus)]), X ~ Bin(plus + minus, 1/2); ties are left out before.
    McNemar's exact test is the same computation on discordant pairs (`mcnemar_exact`)."""
    return mcnemar_exact(plus, minus)


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


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: several candidates tested against one
    base keep the chance of any false "better" at alpha when each adjusted p is read against alpha.

    Sorted ascending p(1) ≤ ... ≤ p(m): adjusted p(i) = max over j ≤ i of min(1, (m − j + 1)·p(j))."""
    if any(not 0.0 <= p <= 1.0 for p in p_values):
        raise ValueError(f"p-values must lie in [0, 1], got {list(p_values)}")
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def _check_counts(successes: int, trials: int) -> None:
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes} of {trials}")


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P[X ≤ k] for X ~ Bin(n, p), summed in log space so large n neither overflows nor underflows."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    return min(
        1.0,
        sum(
            math.exp(base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)
            for i in range(k + 1)
        ),
    )


def exact_upper_bound(successes: int, trials: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a rate: the p at which P[X ≤ successes] = 1 − confidence.

    With 0 harms in n trials it is 1 − (1 − confidence)^(1/n) (the "rule of three": about 3/n at 95%).
    Exact, so never below the true rate more often than 1 − confidence; found by bisection."""
    _check_counts(successes, trials)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if successes == trials:
        return 1.0
    tail = 1.0 - confidence
    low, high = successes / trials, 1.0
    for _ in range(200):
        middle = (low + high) / 2
        if _binomial_cdf(successes, trials, middle) > tail:
            low = middle
        else:
            high = middle
        if high - low < 1e-12:
            break
    return high


def wilson_upper_bound(successes: int, trials: int, confidence: float = 0.95) -> float:
    """One-sided Wilson upper bound of a rate (z of the one-sided confidence, 1.645 at 95%): a
    closed form close to the exact bound, a little under it for rates near 0."""
    _check_counts(successes, trials)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    interval = wilson_interval(successes, trials, NormalDist().inv_cdf(confidence))
    assert interval is not None
    return interval.high


def _pmf(k: int, n: int, log_p: float, log_q: float, log_factorial: Sequence[float]) -> float:
    """P[X = k] for X ~ Bin(n, p) given log p and log(1 − p) (−inf for p = 0 or 1)."""
    if not 0 <= k <= n:
        return 0.0
    log_value = log_factorial[n] - log_factorial[k] - log_factorial[n - k]
    log_value += (k * log_p if k else 0.0) + ((n - k) * log_q if n - k else 0.0)
    return math.exp(log_value)


def cases_needed(plus: int, minus: int, tied: int, alpha: float = ALPHA, power: float = 0.8) -> int | None:
    """Cases an exact two-sided sign test needs to detect the observed split with the given power.

    The observed share of non-tied cases q and of those favouring one side π are taken as the truth;
    n is the fewest non-tied votes whose rejection region (2·P[X ≤ k] ≤ alpha under π = ½) has
    probability ≥ power under π, and the answer is ⌈n / q⌉. None when the split is even (nothing to
    detect) or n would exceed `CASES_NEEDED_CAP` votes. Both CDFs are carried from n to n + 1
    (P[X' ≤ k] = P[X ≤ k] − p·P[X = k]), so the search costs O(n)."""
    if min(plus, minus, tied) < 0:
        raise ValueError(f"counts must be non-negative, got {plus}, {minus}, {tied}")
    if plus == minus:
        return None
    voting = plus + minus
    against = min(plus, minus) / voting  # the chance a vote goes the other way, taken as the truth
    half = math.log(0.5)
    log_against = math.log(against) if against > 0 else -math.inf
    log_with = math.log1p(-against)
    log_factorial = [math.lgamma(i + 1) for i in range(CASES_NEEDED_CAP + 1)]
    critical = -1  # the largest k with 2·P[X ≤ k] ≤ alpha under the null; never shrinks as n grows
    null_cdf = observed_cdf = 0.0  # P[X ≤ critical] for the current n, under ½ and under `against`
    for votes in range(1, CASES_NEEDED_CAP + 1):
        if critical >= 0:  # from votes − 1 trials to votes
            null_cdf -= 0.5 * _pmf(critical, votes - 1, half, half, log_factorial)
            observed_cdf -= against * _pmf(critical, votes - 1, log_against, log_with, log_factorial)
        while critical + 1 < votes:
            widened = null_cdf + _pmf(critical + 1, votes, half, half, log_factorial)
            if 2 * widened > alpha:
                break
            critical += 1
            null_cdf = widened
            observed_cdf += _pmf(critical, votes, log_against, log_with, log_factorial)
        if critical >= 0 and observed_cdf >= power:
            return math.ceil(votes * (voting + tied) / voting)
    return None


CASES_NEEDED_CAP = 1000  # non-tied votes: past this, "more cases than a suite has" is the answer
