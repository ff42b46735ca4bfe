"""Judge agreement statistics against numbers worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from analysis.agreement import bootstrap_interval, confusion, kappa, measure, score_distance_weights, unweighted

CHOICES = ("A", "B", "C", "D", "E")
SCORES = {"A": 0.4, "B": 0.8, "C": 1.0, "D": 0.0, "E": 1.0}
# Ten judgements (label, judge's choice): 7 exact; misses C→E, D→A, E→C.
PAIRS = list(zip("CCCDDDABEE", "CCEDDAABCE", strict=True))


def test_confusion_rows_are_labels_and_columns_choices() -> None:
    assert confusion(PAIRS, CHOICES) == [
        [1, 0, 0, 0, 0],  # A labelled: judged A
        [0, 1, 0, 0, 0],
        [0, 0, 2, 0, 1],  # C labelled: twice C, once E
        [1, 0, 0, 2, 0],  # D labelled: once A, twice D
        [0, 0, 1, 0, 1],
    ]


def test_unweighted_kappa_by_hand() -> None:
    # observed agreement 7/10; label marginals A1 B1 C3 D3 E2, choice marginals A2 B1 C3 D2 E2;
    # chance agreement (1·2 + 1·1 + 3·3 + 3·2 + 2·2) / 100 = 0.22; kappa = (0.7 − 0.22) / (1 − 0.22).
    assert kappa(PAIRS, CHOICES, unweighted(CHOICES)) == pytest.approx(0.48 / 0.78)


def test_score_distance_kappa_by_hand() -> None:
    # weights |score(i) − score(j)| (largest distance is 1): observed disagreement (0 + 0.4 + 0) / 10
    # = 0.04 (C↔E cost nothing, D→A costs 0.4); chance disagreement, row by row of the marginals:
    # A 1·(0.4 + 3·0.6 + 2·0.4 + 2·0.6) = 4.2, B 1·(2·0.4 + 3·0.2 + 2·0.8 + 2·0.2) = 3.4,
    # C 3·(2·0.6 + 0.2 + 2·1) = 10.2, D 3·(2·0.4 + 0.8 + 3·1 + 2·1) = 19.8, E 2·3.4 = 6.8: 44.4 / 100.
    weights = score_distance_weights(CHOICES, SCORES)
    assert weights[2][4] == 0 and weights[3][2] == 1 and weights[0][1] == pytest.approx(0.4)
    assert kappa(PAIRS, CHOICES, weights) == pytest.approx(1 - 0.04 / 0.444)


def test_perfect_chance_and_undefined() -> None:
    perfect = [("A", "A"), ("C", "C"), ("D", "D")]
    assert kappa(perfect, CHOICES, unweighted(CHOICES)) == pytest.approx(1.0)
    # the judge always says C while labels are half C, half D: agreement 0.5 is exactly chance.
    constant = [("C", "C"), ("D", "C")]
    assert kappa(constant, CHOICES, unweighted(CHOICES)) == pytest.approx(0.0)
    # one category on both sides: chance disagreement is 0 and kappa is undefined, not 1.
    assert kappa([("C", "C"), ("C", "C")], CHOICES, unweighted(CHOICES)) is None
    assert kappa([], CHOICES, unweighted(CHOICES)) is None


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate() -> None:
    def statistic(sample: Sequence[tuple[str, str]]) -> float | None:
        return kappa(sample, CHOICES, unweighted(CHOICES))

    first = bootstrap_interval(PAIRS, statistic, resamples=500, seed=3)
    assert first == bootstrap_interval(PAIRS, statistic, resamples=500, seed=3)
    assert first is not None and first[0] < 0.48 / 0.78 < first[1] and first[0] >= -1 and first[1] <= 1
    perfect = [(choice, choice) for choice in "AABCDDE"]
    assert bootstrap_interval(perfect, statistic, resamples=200) == (pytest.approx(1.0), pytest.approx(1.0))
    assert bootstrap_interval([], statistic) is None


def test_measure_puts_it_together() -> None:
    result = measure(PAIRS, CHOICES, SCORES, judge_errors=2, resamples=300)
    assert (result.examples, result.judge_errors, result.agreement) == (10, 2, 0.7)
    assert result.kappa == pytest.approx(0.48 / 0.78)
    assert result.weighted_kappa == pytest.approx(1 - 0.04 / 0.444)
    assert result.mean_score_distance == pytest.approx(0.04)
    assert result.kappa_interval and result.weighted_interval
    assert result.confusion == confusion(PAIRS, CHOICES)
