"""Sequential decisions whose error guarantee survives optional stopping: when to stop running trials.

Why not a Wilson interval checked after every trial: a fixed-sample interval peeked at repeatedly
crosses its threshold by chance far more often than 5%. Here every decision is a test martingale
(a mixture likelihood ratio, Robbins 1970; "method of mixtures" as in Howard, Ramdas, McAuliffe &
Sekhon 2021, Ann. Statist. 49(2), and Ramdas, Grünwald, Vovk & Shafer 2023, Statist. Sci. 38(4)).
Under its null hypothesis such a ratio is a non-negative supermartingale, so by Ville's inequality
the chance it *ever* reaches 1/alpha is at most alpha, however often it is looked at and whenever
the looking stops. A ratio is an e-value; reaching 1/alpha rejects the null.

Three questions:
- one run, one case: is its pass rate above or below a cutoff (`decide_cutoff`)?
- an A/B run, one case, trials paired: is this case's vote settled, B better, A better, or a
  difference too small to matter (`decide_paired`)? It answers for that case alone: its trials
  are repeated draws of the same case, the right sample for a question about it, and it only says
  when the case may stop running trials. Direction comes from the discordant pairs only (as
  McNemar's test); "too small" from the rate of discordant pairs: when fewer than `margin` of the
  pairs disagree, the pass rates cannot differ by `margin` or more.
- an A/B run, all cases: did B improve or regress (`decide_votes`)? This counts cases, one vote
  each, never trials: trials of one case share its prompt, fixture and model, so they are not
  independent evidence about the arms. Direction is the same test on the votes that did not tie;
  "too small" holds when fewer than `margin` of the cases moved at all. Under the null that the
  arms are exchangeable within each case, the sign of each settled vote is a fair coin whenever
  the case stopped (every stopping rule here is symmetric in A and B), so counting the votes of
  cases as they stop keeps the guarantee.

Each one-sided test runs at alpha/2, so any wrong verdict on one case has probability at most alpha.
The priors only decide how fast a true effect is found, never the guarantee; they lean towards the
extremes because most eval cases pass or fail almost always.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

CutoffVerdict = Literal["above", "below"]
PairedVerdict = Literal["improved", "regressed", "fine"]
ABOVE: Final = "above"
BELOW: Final = "below"
IMPROVED: Final = "improved"
REGRESSED: Final = "regressed"
FINE: Final = "fine"

DEFAULT_ALPHA = 0.05
DEFAULT_CUTOFF = 0.5
DEFAULT_MARGIN = 0.3
# Prior Beta(CONCENTRATION, 1) on the alternative side (mirrored where needed): mass near the extremes.
CONCENTRATION = 8.0


def _log_beta_mass(a: float, b: float, low: float, high: float) -> float:
    """log of the integral of x^(a-1) (1-x)^(b-1) over [low, high]."""
    from scipy.special import betainc, betaincc, betaln  # here, not at import: every eval process loads this module

    if high >= 1.0:
        part = float(betaincc(a, b, low)) if low > 0 else 1.0
    elif low <= 0.0:
        part = float(betainc(a, b, high))
    else:
        part = float(betainc(a, b, high) - betainc(a, b, low))
    if part <= 0.0:
        return -math.inf
    return float(betaln(a, b)) + math.log(part)


def log_evidence(
    successes: int, failures: int, null: float, low: float, high: float, prior: tuple[float, float]
) -> float:
    """log of the mixture likelihood ratio against "p = null" with a Beta prior truncated to [low, high].

    Every alternative in [low, high] lies on the same side of `null`, so the ratio is a test
    supermartingale for every p on the other side of `null` too (a one-sided composite null).
    """
    if successes < 0 or failures < 0:
        raise ValueError(f"counts must be non-negative, got {successes} successes and {failures} failures")
    if not 0.0 < null < 1.0:
        raise ValueError(f"the null rate must lie strictly between 0 and 1, got {null}")
    a, b = prior
    numerator = _log_beta_mass(a + successes, b + failures, low, high) - _log_beta_mass(a, b, low, high)
    denominator = successes * math.log(null) + failures * math.log1p(-null)
    return numerator - denominator


def evidence_above(successes: int, failures: int, cutoff: float) -> float:
    """e-value (log) against "p <= cutoff"."""
    return log_evidence(successes, failures, cutoff, cutoff, 1.0, (CONCENTRATION, 1.0))


def evidence_below(successes: int, failures: int, cutoff: float) -> float:
    """e-value (log) against "p >= cutoff" (the mirror image of `evidence_above`)."""
    return evidence_above(failures, successes, 1.0 - cutoff)


def decide_cutoff(
    passed: int, trials: int, cutoff: float = DEFAULT_CUTOFF, alpha: float = DEFAULT_ALPHA
) -> CutoffVerdict | None:
    """ "above"/"below" once the pass rate is confidently on one side of `cutoff`; None while undecided."""
    _check(alpha=alpha, rate=cutoff, name="cutoff")
    threshold = math.log(2.0 / alpha)
    if evidence_above(passed, trials - passed, cutoff) >= threshold:
        return ABOVE
    if evidence_below(passed, trials - passed, cutoff) >= threshold:
        return BELOW
    return None


@dataclass(frozen=True)
class PairCounts:
    """Paired trials of one case: b = A passed and B failed, c = B passed and A failed."""

    pairs: int
    b: int
    c: int

    @property
    def discordant(self) -> int:
        return self.b + self.c


def decide_paired(
    counts: PairCounts, margin: float = DEFAULT_MARGIN, alpha: float = DEFAULT_ALPHA
) -> PairedVerdict | None:
    """For one case: "improved"/"regressed" (B against A on this case) when its discordant pairs lean
    one way beyond chance; "fine" when its pass rates are shown to differ by less than `margin`;
    None while undecided. A verdict about the case, never about the arms: that is `decide_votes`."""
    _check(alpha=alpha, rate=margin, name="margin")
    if counts.discordant > counts.pairs:
        raise ValueError(f"{counts.discordant} discordant pairs out of {counts.pairs}")
    threshold = math.log(2.0 / alpha)
    if evidence_above(counts.c, counts.b, 0.5) >= threshold:
        return IMPROVED
    if evidence_above(counts.b, counts.c, 0.5) >= threshold:
        return REGRESSED
    concordant = counts.pairs - counts.discordant
    # Against "at least `margin` of the pairs disagree"; |pass_B - pass_A| <= P(discordant).
    fine = log_evidence(counts.discordant, concordant, margin, 0.0, margin, (1.0, CONCENTRATION))
    if fine >= threshold:
        return FINE
    return None


@dataclass(frozen=True)
class Votes:
    """Settled case votes of an A/B run: cases favouring B, cases favouring A, cases tied."""

    b_better: int
    a_better: int
    tied: int


def decide_votes(votes: Votes, margin: float = DEFAULT_MARGIN, alpha: float = DEFAULT_ALPHA) -> PairedVerdict | None:
    """ "improved"/"regressed" once the cases' votes lean one way beyond chance (one vote per case,
    ties left out); "fine" once fewer than `margin` of the cases are shown to move; None while undecided."""
    _check(alpha=alpha, rate=margin, name="margin")
    if min(votes.b_better, votes.a_better, votes.tied) < 0:
        raise ValueError(f"vote counts must be non-negative, got {votes}")
    threshold = math.log(2.0 / alpha)
    if evidence_above(votes.b_better, votes.a_better, 0.5) >= threshold:
        return IMPROVED
    if evidence_above(votes.a_better, votes.b_better, 0.5) >= threshold:
        return REGRESSED
    moved = votes.b_better + votes.a_better
    if log_evidence(moved, votes.tied, margin, 0.0, margin, (1.0, CONCENTRATION)) >= threshold:
        return FINE
    return None


def _check(*, alpha: float, rate: float, name: str) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not 0.0 < rate < 1.0:
        raise ValueError(f"the {name} must lie strictly between 0 and 1, got {rate}")
