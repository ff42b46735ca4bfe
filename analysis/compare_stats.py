"""The paired comparison of two groups of trials: pure statistics, no files and no printing.

Two pass rates whose Wilson intervals overlap prove nothing, but the same cases run under A and B
are paired. Trials are paired by (case_id, trial_index) and every record is re-scored offline with
the deterministic scorers; then, per score, each case casts one vote (`analysis.paired`: B passed
its paired trials more often, A did, or they tied) and the verdict is an exact sign test on the
cases that did not tie. The trials of one case share its prompt, fixture and model, so counting
them as independent votes would overstate the evidence; for the same reason the bootstrap interval
of the difference resamples cases. The discordant trial pairs are still counted, as description.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from analysis.paired import BETTER, SAME, WORSE, CaseVote, VoteCount, case_votes, paired_verdict
from analysis.rescore import DETERMINISTIC_NAMES, check_cases, check_scores, refuse_changed_cases, rescore
from analysis.runs import RunInputError
from analysis.stats import Interval, pass_hat_k, wilson_interval
from analysis.summary import OVERALL
from harness.cases import Case
from harness.recording.records import TrialRecord

__all__ = ["BETTER", "SAME", "WORSE", "CaseChange", "Comparison", "GroupStat", "ScoreComparison", "compare"]


@dataclass(frozen=True)
class GroupStat:
    """One side's pass rate over the paired, scorable trials of one score."""

    passed: int
    trials: int
    interval: Interval | None
    pass_hat: dict[int, float | None]

    @property
    def rate(self) -> float | None:
        return self.passed / self.trials if self.trials else None


CaseChange = CaseVote  # a case whose pass count moved between A and B: its vote is not a tie


@dataclass(frozen=True)
class ScoreComparison:
    """Everything said about one score: both sides, the case votes and the sign test behind the verdict."""

    name: str
    cases: int  # cases with at least one pair both sides could score: the unit of the verdict
    pairs: int  # paired trials where both sides could be scored
    dropped: int  # paired trials left out because A's, B's or both trials were unscorable
    unscorable_a: int
    unscorable_b: int
    a: GroupStat
    b: GroupStat
    cases_b_better: int  # votes: cases whose B passed more of their paired trials than A
    cases_a_better: int
    cases_tied: int
    a_pass_b_fail: int  # discordant trial pairs, described, not tested
    a_fail_b_pass: int
    difference: float | None  # pass rate of B minus A, over the pairs
    bootstrap: Interval | None  # resampling cases
    p_value: float  # exact two-sided sign test on the cases that did not tie
    verdict: str
    cases_needed: int | None  # cases the sign test needs at the observed split (None: no split)
    improved: list[CaseChange] = field(default_factory=list)
    regressed: list[CaseChange] = field(default_factory=list)

    @property
    def votes(self) -> VoteCount:
        return VoteCount(self.cases_b_better, self.cases_a_better, self.cases_tied)


@dataclass(frozen=True)
class Comparison:
    """The whole comparison: how the trials paired up, and one `ScoreComparison` per score plus `all_scores`."""

    trials_a: int
    trials_b: int
    paired: int
    paired_cases: int
    unpaired_a: int
    unpaired_b: int
    resamples: int
    seed: int
    scores: dict[str, ScoreComparison]


def _index(records: Iterable[TrialRecord], label: str) -> dict[tuple[str, int], TrialRecord]:
    """Trials by (case_id, trial_index); a duplicate would make the pairing ambiguous, so it is an error."""
    indexed: dict[tuple[str, int], TrialRecord] = {}
    for record in records:
        key = (record.case_id, record.trial_index)
        if key in indexed:
            raise RunInputError(
                f"{label}: case '{record.case_id}' trial {record.trial_index} appears twice "
                "(several models or variants in one group? choose one with --model-a/--model-b)"
            )
        indexed[key] = record
    return indexed


def _group_stat(per_case: Mapping[str, list[bool]]) -> GroupStat:
    """Pass rate, Wilson interval and pass^k (k up to the fewest trials of a case) from per-case verdicts."""
    counts = [(sum(results), len(results)) for results in per_case.values() if results]
    passed, trials = sum(c for c, _ in counts), sum(n for _, n in counts)
    ks = range(1, min((n for _, n in counts), default=0) + 1)
    return GroupStat(passed, trials, wilson_interval(passed, trials), {k: pass_hat_k(counts, k) for k in ks})


def _compare_score(
    name: str,
    keys: Sequence[tuple[str, int]],
    verdicts_a: Mapping[tuple[str, int], dict[str, bool | None]],
    verdicts_b: Mapping[tuple[str, int], dict[str, bool | None]],
    resamples: int,
    seed: int,
) -> ScoreComparison:
    """One score: keep the pairs both sides could score, then let each case vote and test the votes."""
    pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    unscorable_a = unscorable_b = dropped = 0
    for key in keys:
        a, b = verdicts_a[key][name], verdicts_b[key][name]
        unscorable_a += a is None
        unscorable_b += b is None
        if a is None or b is None:
            dropped += 1
        else:
            pairs[key[0]].append((a, b))
    flat = [pair for case_pairs in pairs.values() for pair in case_pairs]
    votes = case_votes(pairs)
    decided = paired_verdict(pairs, resamples, seed)
    return ScoreComparison(
        name=name,
        cases=decided.votes.cases,
        pairs=len(flat),
        dropped=dropped,
        unscorable_a=unscorable_a,
        unscorable_b=unscorable_b,
        a=_group_stat({case_id: [a for a, _ in ps] for case_id, ps in pairs.items()}),
        b=_group_stat({case_id: [b for _, b in ps] for case_id, ps in pairs.items()}),
        cases_b_better=decided.votes.b_better,
        cases_a_better=decided.votes.a_better,
        cases_tied=decided.votes.tied,
        a_pass_b_fail=sum(a and not b for a, b in flat),
        a_fail_b_pass=sum(b and not a for a, b in flat),
        difference=decided.difference,
        bootstrap=decided.interval,
        p_value=decided.p_value,
        verdict=decided.verdict,
        cases_needed=decided.cases_needed,
        improved=[vote for vote in votes if vote.vote == "B"],
        regressed=[vote for vote in votes if vote.vote == "A"],
    )


def compare(
    records_a: Sequence[TrialRecord],
    records_b: Sequence[TrialRecord],
    cases: Mapping[str, Case] | Iterable[Case],
    scores: Sequence[str] = DETERMINISTIC_NAMES,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Re-score both groups and compare them pair by pair, per score and overall (`all_scores`)."""
    by_id = dict(cases) if isinstance(cases, Mapping) else {case.id: case for case in cases}
    scores = check_scores(scores)
    for label, records in (("A", records_a), ("B", records_b)):
        check_cases(records, by_id, label)
    indexed_a, indexed_b = _index(records_a, "A"), _index(records_b, "B")
    keys = sorted(set(indexed_a) & set(indexed_b))
    if not keys:
        raise RunInputError("no trial of A pairs with a trial of B: they share no (case_id, trial_index)")
    refuse_changed_cases([indexed_a[key] for key in keys] + [indexed_b[key] for key in keys], by_id)
    verdicts_a = {key: rescore(indexed_a[key], by_id[key[0]], scores).verdicts for key in keys}
    verdicts_b = {key: rescore(indexed_b[key], by_id[key[0]], scores).verdicts for key in keys}
    return Comparison(
        trials_a=len(indexed_a),
        trials_b=len(indexed_b),
        paired=len(keys),
        paired_cases=len({case_id for case_id, _ in keys}),
        unpaired_a=len(indexed_a) - len(keys),
        unpaired_b=len(indexed_b) - len(keys),
        resamples=resamples,
        seed=seed,
        scores={
            name: _compare_score(name, keys, verdicts_a, verdicts_b, resamples, seed) for name in [*scores, OVERALL]
        },
    )
