"""How far a judge agrees with human labels: confusion matrix, Cohen's kappa, bootstrap intervals.

Why kappa and not just agreement: with 5 choices and labels skewed towards one of them, a judge
that always answers the commonest choice agrees often. Cohen's kappa subtracts the agreement
expected by chance from the two sides' marginals: 1 is perfect, 0 is chance, below 0 is worse.

Two weightings (disagreement weights w, kappa = 1 − Σ w·observed / Σ w·expected):
- unweighted: every disagreement costs 1 (w = 1 off the diagonal); the letters themselves;
- score distance: w(i, j) = |score(i) − score(j)| / the largest such distance, from the
  template's choice scores. Confusing C and E (both 1.0) costs nothing; D (0) for C (1) costs 1.
  This is agreement on what the suite actually consumes, the score.

Two more things a judge is measured on, beside its agreement with the labels:
- its errors as the suite feels them: a trial passes factuality when its score reaches
  PASS_THRESHOLD, so an answer labelled with a passing choice that the judge fails is a false
  alarm, and one labelled with a failing choice that it passes is a miss (rates with Wilson
  intervals, as every rate the suite reports);
- its self-agreement: the same example judged again (fresh requests, same temperature) gets the
  same choice. Fleiss' kappa over the repeats (for two, Scott's pi) takes chance from how often
  the judge uses each choice over all repeats, since every repeat is the same judge.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from analysis.stats import wilson_interval
from analysis.summary import PASS_THRESHOLD

Pair = tuple[str, str]  # (human label, judge choice)
Weights = list[list[float]]
Item = TypeVar("Item")


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
    pairs: Sequence[Item],
    statistic: Callable[[Sequence[Item]], float | None],
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of `statistic` over resamples of the examples (with replacement).

    An item is one example (a label and choice, or every repeat's choice of one example), so a
    resample keeps an example's repeats together. Resamples where the statistic is undefined are
    left out; None when none is defined.
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


def _wilson(successes: int, trials: int) -> tuple[float, float] | None:
    interval = wilson_interval(successes, trials)
    return None if interval is None else (interval.low, interval.high)


def passes(choice: str, scores: Mapping[str, float], threshold: float = PASS_THRESHOLD) -> bool:
    """Whether a trial judged `choice` passes factuality: its score reaches the suite's pass threshold."""
    return scores[choice] >= threshold


@dataclass(frozen=True)
class ErrorRate:
    """One kind of judge error on the labelled answers: how many, out of how many, and which."""

    errors: int
    of: int  # labelled answers of the kind (judged)
    rate: float | None
    interval: tuple[float, float] | None  # Wilson 95%
    examples: list[str] = field(default_factory=list)  # the ids behind the errors


def error_rates(
    verdicts: Sequence[tuple[str, str, str]], scores: Mapping[str, float], threshold: float = PASS_THRESHOLD
) -> tuple[ErrorRate, ErrorRate]:
    """(false alarms, misses) over (example id, label, choice): an answer whose label passes and that
    the judge fails is a false alarm; one whose label fails and that the judge passes is a miss."""
    right = [(example, choice) for example, label, choice in verdicts if passes(label, scores, threshold)]
    wrong = [(example, choice) for example, label, choice in verdicts if not passes(label, scores, threshold)]
    alarms = [example for example, choice in right if not passes(choice, scores, threshold)]
    misses = [example for example, choice in wrong if passes(choice, scores, threshold)]

    def rate(errors: list[str], total: int) -> ErrorRate:
        share = len(errors) / total if total else None
        return ErrorRate(len(errors), total, share, _wilson(len(errors), total), sorted(errors))

    return rate(alarms, len(right)), rate(misses, len(wrong))


def fleiss_kappa(items: Sequence[Sequence[str]], categories: Sequence[str]) -> float | None:
    """Fleiss' kappa of items each rated by the same number of raters (here: one judge's repeats).

    Observed: per item, the share of agreeing pairs of ratings, averaged. Chance: the sum over
    categories of (share of all ratings in it)^2. None when undefined (no items, or every rating in
    one category, where chance agreement is 1).
    """
    if not items:
        return None
    raters = len(items[0])
    if raters < 2 or any(len(item) != raters for item in items):
        lengths = sorted({len(item) for item in items})
        raise ValueError(f"every item needs the same number (at least 2) of ratings, got {lengths}")
    index = {category: position for position, category in enumerate(categories)}
    totals = [0] * len(categories)
    observed = 0.0
    for item in items:
        counts = Counter(item)
        observed += (sum(count * count for count in counts.values()) - raters) / (raters * (raters - 1))
        for category, count in counts.items():
            totals[index[category]] += count
    observed /= len(items)
    ratings = len(items) * raters
    expected = sum((total / ratings) ** 2 for total in totals)
    if expected >= 1.0 - 1e-12:
        return None
    return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class SelfAgreement:
    """How far the judge agrees with itself on examples judged `repeats` times."""

    repeats: int
    examples: int  # examples every repeat answered (the rest are left out)
    incomplete: int  # examples with a failed or missing repeat
    same_choice: int  # examples with the same choice on every repeat
    same_choice_share: float | None
    same_choice_interval: tuple[float, float] | None  # Wilson 95%
    same_score: int  # examples whose every repeat scores the same (C and E both score 1)
    same_score_share: float | None
    same_verdict: int  # examples every repeat passes, or every repeat fails (what a trial's pass rate sees)
    same_verdict_share: float | None
    kappa: float | None  # Fleiss' kappa between repeats
    kappa_interval: tuple[float, float] | None  # bootstrap 95% over examples
    cache_hits: int  # judgements a cache answered: those repeats were not asked afresh
    differing: dict[str, list[str]] = field(default_factory=dict)  # example id -> its choices, repeat by repeat


def measure_self(
    judged: Mapping[str, Sequence[str | None]],
    categories: Sequence[str],
    scores: Mapping[str, float],
    repeats: int,
    cache_hits: int = 0,
    resamples: int = 2000,
    seed: int = 0,
) -> SelfAgreement:
    """Self-agreement over `judged` (example id -> its choices in repeat order, None for a failed call)."""
    complete = {
        example: [str(choice) for choice in choices]
        for example, choices in judged.items()
        if len(choices) == repeats and all(choice is not None for choice in choices)
    }
    count = len(complete)
    same = [example for example, choices in complete.items() if len(set(choices)) == 1]
    same_score = [example for example, choices in complete.items() if len({scores[choice] for choice in choices}) == 1]
    same_verdict = [
        example for example, choices in complete.items() if len({passes(choice, scores) for choice in choices}) == 1
    ]
    items = [complete[example] for example in sorted(complete)]  # in a fixed order, so the bootstrap is too
    return SelfAgreement(
        repeats=repeats,
        examples=count,
        incomplete=len(judged) - count,
        same_choice=len(same),
        same_choice_share=len(same) / count if count else None,
        same_choice_interval=_wilson(len(same), count),
        same_score=len(same_score),
        same_score_share=len(same_score) / count if count else None,
        same_verdict=len(same_verdict),
        same_verdict_share=len(same_verdict) / count if count else None,
        kappa=fleiss_kappa(items, categories) if repeats >= 2 else None,
        kappa_interval=(
            bootstrap_interval(items, lambda sample: fleiss_kappa(sample, categories), resamples, seed)
            if repeats >= 2
            else None
        ),
        cache_hits=cache_hits,
        differing={example: choices for example, choices in sorted(complete.items()) if len(set(choices)) > 1},
    )
