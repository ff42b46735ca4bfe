"""Re-scoring past trials offline with the deterministic scorers of `scorers.registry`.

Factuality needs an LLM judge, so re-running it is neither offline nor reproducible; every other
score is a pure function of the record and its case, so a run from last month is judged by
today's scorers exactly as a fresh one would be.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from autoevals import Score

from analysis.runs import RunInputError
from analysis.summary import OVERALL, PASS_THRESHOLD, ExperimentSummary, TrialScores, summarise
from harness.cases import Case
from harness.recording.records import TrialRecord
from scorers.registry import DETERMINISTIC, spec

DETERMINISTIC_NAMES: tuple[str, ...] = tuple(item.name for item in DETERMINISTIC)


@dataclass(frozen=True)
class ScoredTrial:
    """One record with each re-run scorer's `Score` (for the explanations) and the pass/fail verdicts."""

    record: TrialRecord
    case: Case
    scores: dict[str, Score]
    verdicts: dict[str, bool | None]  # per score and all_scores; None: could not be scored

    @property
    def failed(self) -> bool:
        return self.record.outcome != "ok" or any(verdict is False for verdict in self.verdicts.values())


def verdicts_of(scores: Mapping[str, Score], outcome: str) -> dict[str, bool | None]:
    """Pass/fail per score (None: could not be scored, or an infra_error trial), plus the overall
    verdict: every computable score passes."""
    verdicts: dict[str, bool | None] = {}
    for name, score in scores.items():
        value = None if outcome == "infra_error" else score.score
        verdicts[name] = None if value is None else value >= PASS_THRESHOLD
    computed = [verdict for verdict in verdicts.values() if verdict is not None]
    verdicts[OVERALL] = all(computed) if computed else None
    return verdicts


def check_scores(names: Iterable[str]) -> list[str]:
    """The names, each a deterministic score; anything else is a `RunInputError` naming the known ones."""
    chosen = list(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in DETERMINISTIC_NAMES]
    if unknown:
        raise RunInputError(
            f"unknown score {', '.join(unknown)} (offline re-scoring knows: {', '.join(DETERMINISTIC_NAMES)})"
        )
    return chosen


def check_cases(records: Iterable[TrialRecord], cases: Mapping[str, Case], label: str = "") -> None:
    """Every record's case must be in the dataset: a trial is never silently skipped."""
    missing = sorted({record.case_id for record in records} - set(cases))
    if missing:
        shown = ", ".join(repr(case_id) for case_id in missing[:5]) + (" …" if len(missing) > 5 else "")
        prefix = f"{label}: " if label else ""
        raise RunInputError(
            f"{prefix}{len(missing)} case(s) not in the dataset: {shown} (point --dataset at the run's cases)"
        )


def refuse_changed_cases(records: Iterable[TrialRecord], cases: Mapping[str, Case]) -> None:
    """Trials of a case that changed since they ran (its content hash differs) measured something else."""
    changed = sorted(
        {
            record.case_id
            for record in records
            if record.case_hash and record.case_hash != cases[record.case_id].content_hash()
        }
    )
    if changed:
        shown = ", ".join(repr(case_id) for case_id in changed[:5]) + (" …" if len(changed) > 5 else "")
        raise RunInputError(
            f"{len(changed)} case(s) changed since their trials ran (case hash differs from the dataset's): "
            f"{shown}; compare runs of the same cases (point --dataset at the cases they ran)"
        )


def rescore(record: TrialRecord, case: Case, names: Sequence[str] = DETERMINISTIC_NAMES) -> ScoredTrial:
    """One record re-scored with the named deterministic scorers."""
    scores = {name: spec(name).score(record, case) for name in names}
    return ScoredTrial(record, case, scores, verdicts_of(scores, record.outcome))


def score_run(
    records: Iterable[TrialRecord], cases: Mapping[str, Case], names: Sequence[str] = DETERMINISTIC_NAMES
) -> list[ScoredTrial]:
    """Re-score every record against its case; a record whose case is unknown is an error, never skipped."""
    records = list(records)
    check_cases(records, cases)
    return [rescore(record, cases[record.case_id], names) for record in records]


def summarise_scored(trials: Sequence[ScoredTrial]) -> ExperimentSummary:
    """The suite's usual summary of re-scored trials; a score is n/a exactly where it could not be judged."""
    return summarise(
        [
            TrialScores(
                case_id=t.record.case_id,
                scores={n: None if t.verdicts[n] is None else t.scores[n].score for n in DETERMINISTIC_NAMES},
                outcome=t.record.outcome,
                cost_usd=t.record.cost_usd,
            )
            for t in trials
        ]
    )
