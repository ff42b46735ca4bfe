import math

import pytest

from analysis.stats import pass_hat_k, wilson_interval
from analysis.summary import OVERALL, TrialScores, render, summarise


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [(0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (5, 10, 0.2366, 0.7634), (1, 1, 0.2065, 1.0)],
)
def test_wilson_interval_matches_published_values(successes: int, trials: int, low: float, high: float) -> None:
    interval = wilson_interval(successes, trials)
    assert interval is not None
    assert interval.low == pytest.approx(low, abs=1e-4)
    assert interval.high == pytest.approx(high, abs=1e-4)


def test_wilson_interval_rejects_impossible_counts_and_handles_no_trials() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(3, 2)


def test_pass_hat_k_is_the_unbiased_estimator_averaged_over_cases() -> None:
    # case 1: 2 of 4 pass; case 2: 4 of 4 pass
    per_case = [(2, 4), (4, 4)]
    assert pass_hat_k(per_case, 1) == pytest.approx((0.5 + 1.0) / 2)
    assert pass_hat_k(per_case, 2) == pytest.approx((1 / 6 + 1.0) / 2)
    assert pass_hat_k(per_case, 3) == pytest.approx((0 + 1.0) / 2)
    assert pass_hat_k(per_case, 5) is None  # no case has five trials
    assert pass_hat_k([(3, 3), (1, 2)], 3) == pytest.approx(1.0)  # the two-trial case is left out
    assert math.comb(4, 2) == 6


def test_summary_counts_unscorable_apart_and_overall_needs_every_score() -> None:
    trials = [
        TrialScores("a", {"integrity": 1.0, "factuality": 1.0}),
        TrialScores("a", {"integrity": 1.0, "factuality": 0.4}),
        TrialScores("b", {"integrity": 0.0, "factuality": None}),
        TrialScores("b", {"integrity": None, "factuality": None}, outcome="infra_error"),
    ]
    summary = summarise(trials)
    integrity = summary.scores["integrity"]
    assert (integrity.scored, integrity.passed, integrity.unscorable) == (3, 2, 1)
    factuality = summary.scores["factuality"]
    assert (factuality.scored, factuality.passed, factuality.unscorable) == (2, 1, 2)
    overall = summary.scores[OVERALL]
    assert (overall.scored, overall.passed, overall.unscorable) == (3, 1, 1)
    # case a has 2 overall verdicts (1 pass), case b has 1 (fail): pass^1 = mean(0.5, 0.0)
    assert overall.pass_hat[1] == pytest.approx(0.25)
    assert summary.outcomes == {"ok": 3, "infra_error": 1}
    text = render("prepare · control:oracle", summary)
    assert "integrity" in text and "infra_error 1" in text
