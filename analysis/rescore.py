"""Re-scoring past trials offline with the deterministic scorers of `scorers.registry`, and the
command that shows what today's scorers say differently about a stored run.

Factuality needs an LLM judge, so re-running it is neither offline nor reproducible; every other
score is a pure function of the record and its case, so a run from last month is judged by
today's scorers exactly as a fresh one would be.

    python -m analysis.rescore RUN [--dataset PATH] [--all] [--json] [--braintrust]

The run's own scores (`scores.jsonl`, `analysis.stored_scores`) are compared with today's, per
trial: the old score and the version that made it, the new score and its version, and the new
score's reason. The first lines name the scorers whose version changed since the run, and what
changed in each (a module's code, a distribution, a data file). `--braintrust` also logs the
re-scored run as a new experiment per original experiment, with the original as its base
(`braintrust_run.rescore_upload`). Exit codes: 0 done, 1 the upload lost rows, 2 a bad run, dataset or login.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from autoevals import Score

from analysis.attribution import Attribution, attribute
from analysis.runs import RunInputError, load_records, run_folder
from analysis.stored_scores import (
    PARTS_KEY,
    ScoresFileError,
    StoredScore,
    by_trial,
    load_scores,
    trial_key,
    versions_stored,
)
from analysis.summary import OVERALL, PASS_THRESHOLD, ExperimentSummary, TrialScores, summarise
from harness.cases import Case, DatasetError, load_cases
from harness.recording.records import TrialRecord
from scorers.registry import DETERMINISTIC, SCORERS, spec
from scorers.versions import changed_parts, version_in, version_of

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

    @cached_property
    def attribution(self) -> Attribution | None:
        """Why it failed, from the record and the re-run scores (None: it did not fail)."""
        return attribute(self.record, self.case, self.scores)

    @property
    def cause(self) -> str | None:
        found = self.attribution
        return None if found is None else found.cause


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


def today_versions(names: Sequence[str] = DETERMINISTIC_NAMES) -> dict[str, str]:
    """{score: version} of today's scorers (`scorers.versions`), for saying whether a run's differ."""
    return {name: spec(name).version() for name in names}


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
                cause=t.cause,
            )
            for t in trials
        ]
    )


# --- what today's scorers say differently ----------------------------------------------------------


def _same(old: float | None, new: float | None) -> bool:
    if old is None or new is None:
        return old is new
    return abs(old - new) < 1e-9


def reason_of(name: str, score: Score) -> str:
    """Why a score is what it is, in one line: its reason, else the first line its scorer explains it with."""
    metadata = score.metadata or {}
    reason = metadata.get("reason")
    if reason:
        return str(reason)
    lines = [line.splitlines()[0] for line in spec(name).explain(metadata) if line.strip()]
    return "; ".join(lines[:3])


@dataclass(frozen=True)
class ScoreChange:
    """One score of one trial: what the run said, what today's scorer says, and why."""

    name: str
    old: float | None
    old_version: str | None
    new: float | None
    new_version: str | None
    reason: str  # the new score's
    stored: bool  # the run kept this score (False: nothing to compare with)

    @property
    def changed(self) -> bool:
        return self.stored and not _same(self.old, self.new)


@dataclass(frozen=True)
class RescoredTrial:
    """A stored trial re-scored: every deterministic score's old and new value."""

    trial: ScoredTrial
    changes: list[ScoreChange]
    case_changed: bool  # its case's content differs from the case the trial ran

    @property
    def changed(self) -> list[ScoreChange]:
        return [change for change in self.changes if change.changed]


def compare_with_stored(
    trials: Sequence[ScoredTrial], stored: Mapping[str, Mapping[str, StoredScore]] | None
) -> list[RescoredTrial]:
    """Each re-scored trial beside the scores the run kept for it (none kept: every score unstored)."""
    found: list[RescoredTrial] = []
    for trial in trials:
        kept = (stored or {}).get(trial_key(trial.record), {})
        changes = []
        for name, score in trial.scores.items():
            old = kept.get(name)
            changes.append(
                ScoreChange(
                    name=name,
                    old=old.score if old else None,
                    old_version=old.scorer_version if old else None,
                    new=score.score,
                    new_version=version_in(score),
                    reason=reason_of(name, score),
                    stored=old is not None,
                )
            )
        case_changed = bool(trial.record.case_hash) and trial.record.case_hash != trial.case.content_hash()
        found.append(RescoredTrial(trial, changes, case_changed))
    return found


@dataclass(frozen=True)
class VersionLine:
    """One scorer: the version(s) that scored the run, today's, and what differs between them."""

    name: str
    then: list[str]
    today: str
    rescored: bool  # False: factuality, which needs the judge
    what: list[str] = field(default_factory=list)  # the parts that changed, when the run named them

    @property
    def changed(self) -> bool:
        return bool(self.then) and self.then != [self.today]


def version_lines(info: Mapping[str, Any], stored: Sequence[StoredScore] | None) -> list[VersionLine]:
    """Every scorer's version at the run and today, with the parts that changed (run.json's
    `scorer_version_parts` against today's)."""
    then = versions_stored(info, stored)
    noted = info.get(PARTS_KEY)
    parts_then: Mapping[str, Any] = noted if isinstance(noted, dict) else {}
    lines = []
    for item in SCORERS:
        today = version_of(item)
        old_parts = parts_then.get(item.name)
        versions = sorted(then.get(item.name, set()))
        changed = bool(versions) and versions != [today.version]
        what = changed_parts(old_parts, today.parts) if changed and isinstance(old_parts, dict) else []
        lines.append(VersionLine(item.name, versions, today.version, item.deterministic, what))
    return lines


def render_rescore(
    run_path: Path, trials: Sequence[RescoredTrial], versions: Sequence[VersionLine], kept: bool, show_all: bool
) -> str:
    """The command's text: versions first, then each trial whose score changed (every trial with --all)."""
    cases = {t.trial.record.case_id for t in trials}
    models = sorted({t.trial.record.config.model for t in trials})
    lines = [
        f"rescore: {run_path}: {len(trials)} trial(s) of {len(cases)} case(s), {', '.join(models)}; "
        "re-scored with today's deterministic scorers"
    ]
    lines.append("scorer versions (at the run -> today):")
    for version in versions:
        then = ", ".join(version.then) or "not named"
        if not version.rescored:
            lines.append(f"  {version.name:<26} {then} (not re-scored: it needs the judge)")
            continue
        state = "changed" if version.changed else "same" if version.then else "unknown"
        what = f": {'; '.join(version.what)}" if version.what else ""
        lines.append(f"  {version.name:<26} {then} -> {version.today}  {state}{what}")
    if not kept:
        lines.append(
            "the run kept no scores (it was made before scores were kept beside its records): nothing to compare "
            "with; today's scores:"
        )
    changed = [t for t in trials if t.changed]
    changed_scores = sum(len(t.changed) for t in changed)
    if kept:
        lines.append(
            f"{changed_scores} score(s) changed in {len(changed)} trial(s) of "
            f"{len({t.trial.record.case_id for t in changed})} case(s)"
        )
    for trial in sorted(trials, key=lambda t: (t.trial.record.case_id, t.trial.record.trial_index)):
        shown = trial.changes if (show_all or not kept) else trial.changed
        if not shown:
            continue
        record = trial.trial.record
        note = " (its case changed since the run)" if trial.case_changed else ""
        lines.append(f"{record.case_id} #{record.trial_index} {record.config.model}{note}")
        for change in shown:
            old = f"{_value(change.old)} ({change.old_version or 'version not named'})" if change.stored else "not kept"
            why = f": {change.reason}" if change.reason else ""
            mark = "" if change.changed or not kept else " (same)"
            lines.append(f"  {change.name}: {old} -> {_value(change.new)} ({change.new_version}){mark}{why}")
    return "\n".join(lines)


def _value(value: float | None) -> str:
    if value is None:
        return "n/a"
    verdict = "pass" if value >= PASS_THRESHOLD else "fail"
    return f"{value:g} {verdict}"


def as_json(
    run_path: Path, trials: Sequence[RescoredTrial], versions: Sequence[VersionLine], kept: bool
) -> dict[str, Any]:
    return {
        "run": str(run_path),
        "kept_scores": kept,
        "versions": {
            v.name: {"run": v.then, "today": v.today, "changed": v.changed, "rescored": v.rescored, "what": v.what}
            for v in versions
        },
        "trials": [
            {
                "case_id": t.trial.record.case_id,
                "trial_index": t.trial.record.trial_index,
                "model": t.trial.record.config.model,
                "case_changed": t.case_changed,
                "scores": {
                    c.name: {
                        "old": c.old,
                        "old_version": c.old_version,
                        "new": c.new,
                        "new_version": c.new_version,
                        "changed": c.changed,
                        "kept": c.stored,
                        "reason": c.reason,
                    }
                    for c in t.changes
                },
            }
            for t in trials
        ],
        "changed": sum(len(t.changed) for t in trials),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.rescore",
        description="Re-score a stored run with today's scorers and show, per trial, what changed and why.",
    )
    parser.add_argument("run", metavar="RUN", help="run folder, its trials.jsonl, or a run id under results/")
    parser.add_argument("--dataset", help="case file or folder (default: EVAL_DATASET, then the bundled cases)")
    parser.add_argument("--all", action="store_true", help="list every trial's scores, not only the changed ones")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    parser.add_argument(
        "--braintrust",
        action="store_true",
        help="also log the re-scored run to Braintrust, one experiment per original one, that one as its base",
    )
    args = parser.parse_args(argv)
    if args.braintrust:
        from braintrust_run.rescore_upload import UploadError, log_in

        try:
            log_in()  # `.env` and the key first: the settings are read once, after them
        except UploadError as error:
            print(f"rescore: {error}", file=sys.stderr)
            return error.code
    try:
        path, info, records = load_records(args.run)
        run_dir = run_folder(path)
        cases = {case.id: case for case in load_cases(args.dataset)}
        stored = load_scores(run_dir)
        trials = compare_with_stored(score_run(records, cases), by_trial(stored) if stored is not None else None)
        versions = version_lines(info, stored)
    except (RunInputError, DatasetError, ScoresFileError, OSError) as error:
        print(f"rescore: error: {error}", file=sys.stderr)
        return 2
    kept = stored is not None
    if args.json:
        print(json.dumps(as_json(run_dir, trials, versions, kept), sort_keys=True))
    else:
        print(render_rescore(run_dir, trials, versions, kept, args.all))
    if not args.braintrust:
        return 0
    from braintrust_run.rescore_upload import UploadError, log_rescored

    try:
        lines = log_rescored(run_dir, info, upload_groups(trials), {v.name: v.today for v in versions if v.rescored})
    except UploadError as error:
        print(f"rescore: {error}", file=sys.stderr)
        return error.code
    for line in lines:
        print(f"rescore: {line}")
    return 0


def upload_groups(trials: Sequence[RescoredTrial]) -> dict[tuple[str, int, str], list[dict[str, Any]]]:
    """The re-scored trials as Braintrust rows, per original experiment (model, decoy count, scenario):
    the same input, expected answer and output as the run's rows, today's scores, and per score the
    old and new value, both versions and the reason."""
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for trial in trials:
        record, case = trial.trial.record, trial.trial.case
        key = (record.config.model, record.config.decoy_count, case.scenario)
        groups.setdefault(key, []).append(
            {
                "input": case.input,
                "expected": case.expected_answer,
                "output": record.final_answer,
                "scores": {change.name: change.new for change in trial.changes},
                "metadata": {
                    "case_id": record.case_id,
                    "trial_index": record.trial_index,
                    "scenario": case.scenario,
                    "fixture": case.fixture,
                    "outcome": record.outcome,
                    "case_changed": trial.case_changed,
                    "changed": [change.name for change in trial.changed],
                    "rescored": {
                        change.name: {
                            "old": change.old,
                            "old_version": change.old_version,
                            "new": change.new,
                            "new_version": change.new_version,
                            "reason": change.reason,
                        }
                        for change in trial.changes
                    },
                },
            }
        )
    return groups


if __name__ == "__main__":
    sys.exit(main())
