"""A paired A/B verdict with the case as the unit: one vote per case, never one per trial.

Why: the trials of one case share its prompt, its fixture and its model, so they are not
independent samples of "does B do better". Three trials on each of four cases, all favouring B, are
four pieces of evidence, not twelve: an exact test on the twelve discordant trial pairs says
p = 0.0005, one vote per case says 4-0, p = 0.125, undecided. So each case casts one vote (B better,
A better, or tied: its pass counts over its paired trials), the exact sign test runs on the cases
that did not tie, and the size of the difference comes with a bootstrap interval that resamples
cases. Pure functions of per-case pairs, for `analysis.compare`, `make ab`, and a tuning loop that
tests several candidates against one base (`analysis.stats.holm`) and bounds a candidate's harm rate
(`analysis.stats.exact_upper_bound`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from analysis.stats import ALPHA, Interval, cases_needed, paired_bootstrap, sign_test

Vote = Literal["B", "A", "tie"]
BETTER, WORSE, SAME = "B better", "B worse", "no significant difference"
UNIT = "cases"  # what every count of a paired verdict counts


@dataclass(frozen=True)
class CaseVote:
    """One case's paired trials: how often each arm passed them, and the vote that follows."""

    case_id: str
    a_passed: int
    b_passed: int
    trials: int  # paired trials both arms could be judged on

    @property
    def vote(self) -> Vote:
        if self.b_passed > self.a_passed:
            return "B"
        return "A" if self.a_passed > self.b_passed else "tie"

    @property
    def difference(self) -> float:
        """B's pass rate minus A's over this case's paired trials."""
        return (self.b_passed - self.a_passed) / self.trials


@dataclass(frozen=True)
class VoteCount:
    """Cases favouring each arm, and the cases that tied (equal pass counts)."""

    b_better: int
    a_better: int
    tied: int

    @property
    def voting(self) -> int:
        return self.b_better + self.a_better

    @property
    def cases(self) -> int:
        return self.voting + self.tied

    def describe(self) -> str:
        """`3 cases favour B, 1 favours A, 2 tied`: the unit named in every sentence."""

        def cases(count: int) -> str:
            return f"{count} case{'s' if count != 1 else ''}"

        favour = "favour" if self.b_better != 1 else "favours"
        other = "favour" if self.a_better != 1 else "favours"
        return f"{cases(self.b_better)} {favour} B, {self.a_better} {other} A, {self.tied} tied"


@dataclass(frozen=True)
class PairedVerdict:
    """The verdict on one score, from the case votes, with the size of the difference beside it."""

    votes: VoteCount
    p_value: float  # exact two-sided sign test on the non-tied cases
    verdict: str  # BETTER, WORSE or SAME at `alpha`
    difference: float | None  # B's pass rate minus A's over every paired trial
    interval: Interval | None  # bootstrap over cases of `difference`
    cases_needed: int | None  # cases the sign test needs at this split for 80% power (None: no split)


def case_votes(per_case: Mapping[str, Sequence[tuple[bool, bool]]]) -> list[CaseVote]:
    """One `CaseVote` per case with at least one pair, from its (A passed, B passed) pairs, by case id."""
    return [
        CaseVote(case_id, sum(a for a, _ in pairs), sum(b for _, b in pairs), len(pairs))
        for case_id, pairs in sorted(per_case.items())
        if pairs
    ]


def count_votes(votes: Sequence[CaseVote]) -> VoteCount:
    kinds = [vote.vote for vote in votes]
    return VoteCount(kinds.count("B"), kinds.count("A"), kinds.count("tie"))


def verdict_of(votes: VoteCount, p_value: float, alpha: float = ALPHA) -> str:
    """BETTER or WORSE when the sign test rejects "no difference" at alpha, else SAME."""
    if p_value >= alpha or votes.b_better == votes.a_better:
        return SAME
    return BETTER if votes.b_better > votes.a_better else WORSE


def paired_verdict(
    per_case: Mapping[str, Sequence[tuple[bool, bool]]], resamples: int = 2000, seed: int = 0, alpha: float = ALPHA
) -> PairedVerdict:
    """The case-level verdict on per-case (A passed, B passed) pairs: votes, exact sign test, the pooled
    difference and its bootstrap interval over cases, and the cases a decision would need."""
    votes = count_votes(case_votes(per_case))
    pairs = [pair for case_pairs in per_case.values() for pair in case_pairs]
    p_value = sign_test(votes.b_better, votes.a_better)
    return PairedVerdict(
        votes=votes,
        p_value=p_value,
        verdict=verdict_of(votes, p_value, alpha),
        difference=sum(int(b) - int(a) for a, b in pairs) / len(pairs) if pairs else None,
        interval=paired_bootstrap([list(case_pairs) for case_pairs in per_case.values()], resamples, seed),
        cases_needed=cases_needed(votes.b_better, votes.a_better, votes.tied, alpha),
    )
