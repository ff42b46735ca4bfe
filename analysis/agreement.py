"""How far a judge agrees with human labels: confusion matrix, Cohen's kappa, bootstrap intervals.

Why kappa and not just agreement: with 5 choices and labels skewed towards one of them, a judge
that always answers the commonest choice agrees often. Cohen's kappa subtracts the agreement
expected by chance from the two sides' marginals: 1 is perfect, 0 is chance, below 0 is worse.

Two weightings (disagreement weights w, kappa = 1 − Σ w·observed / Σ w·expected):
- unweighted: every disagreement costs 1 (w = 1 off the diagonal); the letters themselves;
- score distance: w(i, j) = |score(i) − score(j)| / the largest such distance, from the
  template's choice scores. Confusing C and E (both 1.0) costs nothing; D (0) for C (1) costs 1.
  This is agreement on what the suite actually consumes, the score.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Pair = tuple[str, str]  # (human label, judge choice)
Weights = list[list[float]]


def confusion(pairs: Sequence[Pair], categories: Sequence[str]) -> list[list[int]]:
    """Counts: rows are the labels, columns the judge's choices, both in `categories` order."""
    index = {category: position for position, category in enumerate(categories)}
    matrix = [[0] * len(categories) for _ in categories]
    for label, choice in pairs:
        matrix[index[label]][index[choice]] += 1
    return matrix


def unweighted(categories: Sequence[str]) -> Weights:
    """Every disagreement costs 1."""
    return [[0.0 if row == column else 1.0 for column in categories] for row in categories]


def score_distance_weights(categories: Sequence[str], scores: Mapping[str, float]) -> Weights:
    """Disagreement costs the distance between the two choices' scores, scaled to [0, 1]."""
    distances = [[abs(scores[row] - scores[column]) for column in categories] for row in categories]
    largest = max(max(line) for line in distances)
    return [[value / largest if largest else 0.0 for value in line] for line in distances]


def kappa(pairs: Sequence[Pair], categories: Sequence[str], weights: Weights) -> float | None:
    """Cohen's kappa with disagreement `weights`; None when chance disagreement is zero (undefined)."""
    if not pairs:
        return None
    total = len(pairs)
    matrix = confusion(pairs, categories)
    size = range(len(categories))
    label_share = [sum(row) / total for row in matrix]
    choice_share = [sum(matrix[row][column] for row in size) / total for column in size]
    observed = sum(weights[row][column] * matrix[row][column] / total for row in size for column in size)
    expected = sum(weights[row][column] * label_share[row] * choice_share[column] for row in size for column in size)
    if expected == 0:
        return None
    return 1.0 - observed / expected


def bootstrap_interval(
    pairs: Sequence[Pair],
    statistic: Callable[[Sequence[Pair]], float | None],
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of `statistic` over resamples of the examples (with replacement).

    Resamples where the statistic is undefined are left out; None when none is defined.
    """
    if not pairs or resamples < 1:
        return None
    generator = random.Random(seed)
    values = sorted(
        value
        for value in (statistic(generator.choices(pairs, k=len(pairs))) for _ in range(resamples))
        if value is not None
    )
    if not values:
        return None
    tail = (1.0 - level) / 2
    low = values[math.floor(tail * (len(values) - 1))]
    high = values[math.ceil((1.0 - tail) * (len(values) - 1))]
    return low, high


@dataclass(frozen=True)
class Agreement:
    """Everything `analysis.calibrate` reports for one judge model and template version."""

    examples: int  # judged (judge errors left out)
    judge_errors: int
    agreement: float | None  # share of exact choices
    kappa: float | None
    kappa_interval: tuple[float, float] | None
    weighted_kappa: float | None
    weighted_interval: tuple[float, float] | None
    mean_score_distance: float | None  # |score(choice) − score(label)|, averaged
    confusion: list[list[int]]


def measure(
    pairs: Sequence[Pair],
    categories: Sequence[str],
    scores: Mapping[str, float],
    judge_errors: int = 0,
    resamples: int = 2000,
    seed: int = 0,
) -> Agreement:
    """Agreement, both kappas with bootstrap intervals (same seed, so reruns agree), confusion."""
    plain = unweighted(categories)
    by_score = score_distance_weights(categories, scores)
    count = len(pairs)
    return Agreement(
        examples=count,
        judge_errors=judge_errors,
        agreement=sum(label == choice for label, choice in pairs) / count if count else None,
        kappa=kappa(pairs, categories, plain),
        kappa_interval=bootstrap_interval(pairs, lambda sample: kappa(sample, categories, plain), resamples, seed),
        weighted_kappa=kappa(pairs, categories, by_score),
        weighted_interval=bootstrap_interval(
            pairs, lambda sample: kappa(sample, categories, by_score), resamples, seed
        ),
        mean_score_distance=(
            sum(abs(scores[label] - scores[choice]) for label, choice in pairs) / count if count else None
        ),
        confusion=confusion(pairs, categories),
    )
