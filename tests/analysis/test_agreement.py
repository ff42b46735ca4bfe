"""Judge agreement statistics against numbers worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from analysis.agreement import (
    bootstrap_interval,
    confusion,
    error_rates,
    fleiss_kappa,
    kappa,
    measure,
    measure_self,
    score_distance_weights,
    unweighted,
)

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


# A judge asked twice about the same ten examples (labels as above): the first judgement fails the
# right answer example-01 (C judged D) and passes the wrong one example-04 (D judged B); the second
# changes its mind on example-01 (D, then C) and example-09 (C, then E: the same score, 1).
FIRST = "CDCDBDABEC"
SECOND = "CCCDBDABEE"
IDS = [f"example-{number:02d}" for number in range(10)]


def test_false_alarms_and_misses_by_hand() -> None:
    # B, C and E score at least 0.8 and pass; A (0.4) and D (0) fail. Right answers: the labels C C C B E E
    # (examples 0, 1, 2, 7, 8, 9), judged C D C B E C: one failed (example-01), 1 of 6. Wrong answers: the
    # labels D D D A (3, 4, 5, 6), judged D B D A: one passed (example-04), 1 of 4.
    verdicts = list(zip(IDS, "CCCDDDABEE", FIRST, strict=True))
    false_alarms, misses = error_rates(verdicts, SCORES)
    assert (false_alarms.errors, false_alarms.of, false_alarms.examples) == (1, 6, ["example-01"])
    assert (misses.errors, misses.of, misses.examples) == (1, 4, ["example-04"])
    assert false_alarms.rate == pytest.approx(1 / 6) and misses.rate == pytest.approx(0.25)
    # Wilson 95% for 1 of 6: centre (1/6 + z²/12) / (1 + z²/6) = 0.2968, half-width 0.2667.
    assert false_alarms.interval == (pytest.approx(0.03005, abs=1e-5), pytest.approx(0.56350, abs=1e-5))
    assert misses.interval == (pytest.approx(0.04559, abs=1e-5), pytest.approx(0.69936, abs=1e-5))
    # the judge-a of the tests above mixes up C and E and says A for a D: no error crosses the pass line
    clean_alarms, clean_misses = error_rates(list(zip(IDS, "CCCDDDABEE", "CCEDDAABCE", strict=True)), SCORES)
    assert (clean_alarms.errors, clean_alarms.of, clean_misses.errors, clean_misses.of) == (0, 6, 0, 4)
    # 0 of 6 still leaves up to z² / (6 + z²) = 39% possible
    assert clean_alarms.rate == 0
    assert clean_alarms.interval == (pytest.approx(0.0, abs=1e-12), pytest.approx(3.8415 / 9.8415, abs=1e-4))
    none, _ = error_rates([("x", "D", "D")], SCORES)
    assert (none.of, none.rate, none.interval) == (0, None, None)


def test_fleiss_kappa_by_hand() -> None:
    # Two repeats: 8 of 10 examples agree, observed 0.8. The 20 ratings: A 2, B 4, C 6, D 5, E 3, so chance
    # 0.1² + 0.2² + 0.3² + 0.25² + 0.15² = 0.225 and kappa (0.8 − 0.225) / (1 − 0.225).
    items = [list(pair) for pair in zip(FIRST, SECOND, strict=True)]
    assert fleiss_kappa(items, CHOICES) == pytest.approx(0.575 / 0.775)
    # Three repeats: AAA, AAB, BBB agree on 1, 1/3 (one pair of three) and 1 of their pairs: observed 7/9;
    # ratings A 5, B 4 of 9: chance 41/81; kappa (63/81 − 41/81) / (40/81) = 0.55.
    assert fleiss_kappa([["A", "A", "A"], ["A", "A", "B"], ["B", "B", "B"]], CHOICES) == pytest.approx(0.55)
    assert fleiss_kappa([["C", "C"], ["D", "D"]], CHOICES) == pytest.approx(1.0)
    assert fleiss_kappa([["C", "C"], ["C", "C"]], CHOICES) is None  # one category only: chance is 1
    assert fleiss_kappa([], CHOICES) is None
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([["C", "C"], ["C"]], CHOICES)


def test_self_agreement_by_hand() -> None:
    judged: dict[str, list[str | None]] = {
        example: [first, second] for example, first, second in zip(IDS, FIRST, SECOND, strict=True)
    }
    found = measure_self(judged, CHOICES, SCORES, repeats=2, resamples=300)
    assert (found.examples, found.incomplete, found.same_choice, found.same_score, found.same_verdict) == (
        10,
        0,
        8,
        9,
        9,
    )
    assert found.same_choice_share == pytest.approx(0.8) and found.same_score_share == pytest.approx(0.9)
    assert found.same_choice_interval == (pytest.approx(0.49016, abs=1e-5), pytest.approx(0.94332, abs=1e-5))
    assert found.kappa == pytest.approx(0.575 / 0.775)
    assert found.kappa_interval is not None and found.kappa_interval[0] < 0.575 / 0.775 <= found.kappa_interval[1]
    assert found.differing == {"example-01": ["D", "C"], "example-09": ["C", "E"]}
    # a failed repeat or a missing one leaves the example out, and says so
    judged["example-00"] = ["C", None]
    judged["example-02"] = ["C"]
    partial = measure_self(judged, CHOICES, SCORES, repeats=2, cache_hits=1, resamples=100)
    assert (partial.examples, partial.incomplete, partial.same_choice, partial.cache_hits) == (8, 2, 6, 1)
    # B then C: another score (0.8, 1), the same verdict (both pass); A then D: both fail
    moved = measure_self({"x": ["B", "C"], "y": ["A", "D"]}, CHOICES, SCORES, 2, resamples=10)
    assert (moved.same_choice, moved.same_score, moved.same_verdict) == (0, 0, 2)
    # a judge that repeats itself: 1, whatever it chose
    steady = measure_self({example: [label] * 3 for example, label in zip(IDS, FIRST, strict=True)}, CHOICES, SCORES, 3)
    assert (steady.same_choice, steady.kappa, steady.differing) == (10, pytest.approx(1.0), {})
