"""One vote per case: the paired verdict, the sequential rule over cases, and the helpers a tuning loop
reuses (Holm's correction, one-sided upper bounds of a harm rate, the cases a sign test needs). Every
expected value is computed by hand in the comments beside it."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from analysis.paired import BETTER, SAME, WORSE, CaseVote, VoteCount, case_votes, paired_verdict
from analysis.sequential import FINE, IMPROVED, REGRESSED, PairCounts, Votes, decide_paired, decide_votes
from analysis.stats import cases_needed, exact_upper_bound, holm, mcnemar_exact, sign_test, wilson_upper_bound

FAIL_PASS = (False, True)  # A failed the trial, B passed it


def test_three_trials_on_each_of_four_cases_all_favouring_b_are_four_votes_not_twelve() -> None:
    per_case = {f"case-{n}": [FAIL_PASS] * 3 for n in range(4)}
    verdict = paired_verdict(per_case, resamples=200, seed=0)
    assert verdict.votes == VoteCount(b_better=4, a_better=0, tied=0)
    # Four fair coins all landing on B: P = (1/2)^4 = 1/16, two-sided 2/16 = 0.125: undecided.
    assert verdict.p_value == 0.125 and verdict.verdict == SAME
    # The trial-level test this replaces: 12 discordant pairs, 2·(1/2)^12 = 0.00048828125, "improved".
    assert mcnemar_exact(0, 12) == 2 / 4096 < 0.05
    assert verdict.difference == 1.0 and verdict.interval is not None
    assert (verdict.interval.low, verdict.interval.high) == (1.0, 1.0)  # every resampled case moved by +100%
    # The same split on six cases is the first that decides: 2·(1/2)^6 = 0.03125 < 0.05.
    six = paired_verdict({f"case-{n}": [FAIL_PASS] * 3 for n in range(6)}, resamples=10)
    assert (six.p_value, six.verdict) == (0.03125, BETTER)
    assert verdict.votes.describe() == "4 cases favour B, 0 favour A, 0 tied"


# Six cases of three paired trials, (A passed, B passed) per trial.
MIXED = {
    "c1": [(True, True), (True, True), (False, True)],  # A 2, B 3: B
    "c2": [(False, True), (False, False), (False, True)],  # A 0, B 2: B
    "c3": [(True, True), (True, True), (True, True)],  # A 3, B 3: tie
    "c4": [(True, False), (False, False), (True, True)],  # A 2, B 1: A
    "c5": [(False, True), (True, True), (False, True)],  # A 1, B 3: B
    "c6": [(False, False), (False, True), (False, False)],  # A 0, B 1: B
}


def test_a_mixed_example_counted_by_hand() -> None:
    votes = case_votes(MIXED)
    assert [(v.case_id, v.a_passed, v.b_passed, v.trials, v.vote) for v in votes] == [
        ("c1", 2, 3, 3, "B"),
        ("c2", 0, 2, 3, "B"),
        ("c3", 3, 3, 3, "tie"),
        ("c4", 2, 1, 3, "A"),
        ("c5", 1, 3, 3, "B"),
        ("c6", 0, 1, 3, "B"),
    ]
    verdict = paired_verdict(MIXED, resamples=500, seed=3)
    assert verdict.votes == VoteCount(4, 1, 1) and verdict.votes.describe() == "4 cases favour B, 1 favours A, 1 tied"
    # Five votes that did not tie, one against: P[X <= 1] = (C(5,0) + C(5,1)) / 32 = 6/32; p = 12/32 = 0.375.
    assert verdict.p_value == 0.375 and verdict.verdict == SAME
    # Counted as 18 independent trials instead: b = 1 (c4), c = 6; p = 2·(1 + 7)/128 = 0.125.
    assert mcnemar_exact(1, 6) == 0.125
    # Pooled difference: (6 − 1) / 18 trials.
    assert verdict.difference == pytest.approx(5 / 18)
    assert verdict.interval is not None and verdict.interval.low <= 5 / 18 <= verdict.interval.high
    # 4 of 5 non-tied votes favour B (pi = 0.8), 5 of 6 cases vote (q = 5/6). The sign test first reaches
    # 80% power at n = 20 votes: its rejection region is "at most 5 against" (2·P[X <= 5] = 2·21700/2^20
    # = 0.0414), and P[Bin(20, 0.2) <= 5] = 0.8042 (n = 19 gives 0.6733, n = 17 0.7582). 20 / (5/6) = 24.
    assert verdict.cases_needed == 24
    mirrored = {case_id: [(b, a) for a, b in pairs] for case_id, pairs in MIXED.items()}
    assert paired_verdict(mirrored, resamples=10).votes == VoteCount(1, 4, 1)


def test_a_case_votes_by_its_pass_counts_and_ties_do_not_vote() -> None:
    assert CaseVote("x", a_passed=2, b_passed=2, trials=4).vote == "tie"
    assert CaseVote("x", a_passed=3, b_passed=2, trials=4).difference == -0.25
    all_ties = paired_verdict({"a": [(True, False), (False, True)], "b": [(True, True)]}, resamples=10)
    assert all_ties.votes == VoteCount(0, 0, 2) and all_ties.p_value == 1.0 and all_ties.verdict == SAME
    assert all_ties.cases_needed is None  # an even split: nothing to detect
    against = paired_verdict({f"c{n}": [(True, False)] for n in range(7)}, resamples=10)
    assert (against.votes, against.p_value, against.verdict) == (VoteCount(0, 7, 0), 2 / 128, WORSE)
    empty = paired_verdict({}, resamples=10)
    assert (empty.votes.cases, empty.difference, empty.interval) == (0, None, None)


def test_the_sign_test_is_the_exact_binomial_tail_of_the_votes() -> None:
    assert sign_test(4, 0) == 0.125 and sign_test(0, 4) == 0.125
    assert sign_test(2, 0) == 0.5  # two cases can never decide: 2·(1/4)
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(9, 1) == pytest.approx(2 * 11 / 1024)  # 2·(C(10,0) + C(10,1)) / 2^10


def test_the_sequential_rule_counts_cases_not_trials() -> None:
    # Pooling the twelve trials of four cases into one count would decide "improved" ...
    assert decide_paired(PairCounts(12, 0, 12)) == IMPROVED
    # ... four votes do not, whatever the trials behind them; seven unanimous votes do, as seven
    # unanimous pairs do for one case (the same mixture evidence against a fair coin).
    assert decide_votes(Votes(4, 0, 0)) is None
    assert decide_votes(Votes(6, 0, 0)) is None
    assert decide_votes(Votes(7, 0, 0)) == IMPROVED == decide_paired(PairCounts(7, 0, 7))
    assert decide_votes(Votes(7, 0, 5)) == IMPROVED  # ties carry no direction
    assert decide_votes(Votes(0, 7, 3)) == REGRESSED
    assert decide_votes(Votes(0, 0, 13)) == FINE and decide_votes(Votes(0, 0, 12)) is None
    with pytest.raises(ValueError, match="non-negative"):
        decide_votes(Votes(-1, 0, 0))


def test_holm_adjusts_step_down_in_the_order_given() -> None:
    # Sorted: 0.01·3 = 0.03; 0.03·2 = 0.06; 0.04·1 = 0.04, raised to the running maximum 0.06.
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.02, 0.5]) == pytest.approx([0.04, 0.5])
    assert holm([0.6, 0.6, 0.01]) == pytest.approx([1.0, 1.0, 0.03])  # capped at 1
    assert holm([]) == []
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


def test_upper_bounds_of_a_harm_rate() -> None:
    # No harm in 20 trials: (1 − p)^20 = 0.05, p = 1 − 0.05^(1/20) = 0.13911 (about 3/20, the rule of three).
    assert exact_upper_bound(0, 20) == pytest.approx(1 - 0.05 ** (1 / 20), abs=1e-9)
    # One harm in 10: (1 − p)^10 + 10·p·(1 − p)^9 = 0.05 at p = 0.39416.
    bound = exact_upper_bound(1, 10)
    assert (1 - bound) ** 10 + 10 * bound * (1 - bound) ** 9 == pytest.approx(0.05, abs=1e-9)
    assert bound == pytest.approx(0.39416, abs=1e-5)
    assert exact_upper_bound(5, 5) == 1.0
    # Wilson at z = 1.6449 with no harm: (z²/n) / (1 + z²/n) = 0.135277 / 1.135277 = 0.11916.
    assert wilson_upper_bound(0, 20) == pytest.approx(0.11916, abs=1e-5)
    assert wilson_upper_bound(0, 20) < exact_upper_bound(0, 20)  # the closed form is the bolder one
    for bad in ((-1, 3), (4, 3), (0, 0)):
        with pytest.raises(ValueError, match="successes"):
            exact_upper_bound(*bad)
    with pytest.raises(ValueError, match="confidence"):
        wilson_upper_bound(0, 10, confidence=1.0)


def _cases_needed_by_brute_force(plus: int, minus: int, tied: int, alpha: float = 0.05) -> int | None:
    """The same definition with exact fractions and no carried state, for small answers."""
    against = Fraction(min(plus, minus), plus + minus)
    for votes in range(1, 200):
        region = [
            k
            for k in range(votes + 1)
            if 2 * Fraction(sum(math.comb(votes, i) for i in range(k + 1)), 2**votes) <= alpha
        ]
        if not region:
            continue
        critical = max(region)
        power = sum(math.comb(votes, j) * against**j * (1 - against) ** (votes - j) for j in range(critical + 1))
        if power >= Fraction(8, 10):
            return math.ceil(Fraction(votes * (plus + minus + tied), plus + minus))
    return None


def test_cases_needed_matches_the_definition() -> None:
    # Unanimous votes: n = 5 gives 2/32 = 0.0625 > 0.05, n = 6 gives 2/64 and power 1.
    assert cases_needed(4, 0, 0) == 6 == cases_needed(0, 3, 0)
    assert cases_needed(6, 0, 2) == 8  # six votes among eight cases: 6 / (6/8)
    for split in ((4, 1, 1), (3, 1, 2), (5, 2, 0), (0, 9, 4), (7, 3, 1)):
        assert cases_needed(*split) == _cases_needed_by_brute_force(*split), split
    assert cases_needed(3, 3, 1) is None
    assert cases_needed(51, 49, 0) is None  # past the cap of non-tied votes
