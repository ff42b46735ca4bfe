"""The scorers as the Eval runs them: each adapter, plus a note of what the run gate needs from its metadata.

Braintrust keeps a score's metadata in its span and hands the reporter only the numbers, so a
judge that failed (`metadata["judge_error"]`, score None) would look like any n/a, and an integrity
0 against main before the trial (a change nobody approved) like a 0 against the expected state.
Each scorer is wrapped to remember, per trial key, the first judge error it returned and whether
it saw main changed without approval (`scorers.main_damage`); the run gate counts both. Once every
scorer of a trial has answered, the trial's failure is attributed to one cause
(`analysis.attribution`, from the record and every score with its metadata) and only that is kept:
the record is read from `harness.recording.trial_registry` one last time (the task registers it
for one reader more than there are scorers) and dropped, so a long run holds no records.

The wrapper also keeps every score in the run's folder, beside the records the harness wrote
(`results/<run id>/scores.jsonl`, `analysis.stored_scores`), each naming the scorer version that
made it, and notes the versions in `run.json` once: a later re-score has something to compare
with. A score that cannot be written is counted (`lost_scores`) and fails the run, as a lost record does.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from autoevals import Score

from analysis.attribution import Attribution, attribute
from analysis.stored_scores import PARTS_KEY, VERSIONS_KEY, ScoresFile, stored
from braintrust_run.run_state import KeptScores, this_run
from braintrust_run.settings import current
from harness.recording import trial_registry
from harness.recording.records import TrialRecord
from harness.recording.store import ResultsStore
from scorers.main_damage import GATE_SCORES, changed_main_unapproved
from scorers.registry import SCORERS
from scorers.versions import version_of

READERS = len(SCORERS) + 1  # the registry's lookups of one trial: every scorer's, then the attribution's


def keep_scores(trial_key: str, record: TrialRecord, results_dir: Path, run_id: str) -> None:
    """Keep the scores of the trial registered under `trial_key` in `results_dir/run_id/` (the task
    calls this for each trial the results store kept)."""
    state = this_run().scoring
    with state.lock:
        state.kept[trial_key] = KeptScores(
            record, ScoresFile(results_dir / run_id), ResultsStore(results_dir, run_id), len(SCORERS)
        )


def _keep(score: Score, name: str, key: str) -> None:
    state = this_run().scoring
    with state.lock:
        kept = state.kept.get(key)
        if kept is None:
            return
        kept.left -= 1
        if kept.left <= 0:
            del state.kept[key]
        note_run = kept.scores.run_dir not in state.noted_runs
        state.noted_runs.add(kept.scores.run_dir)
    try:
        if note_run:
            versions = [version_of(spec) for spec in SCORERS]
            tuning = current().tune_context  # a tuning run's child: what it measured, as its experiments say
            kept.store.add_to_run(
                {VERSIONS_KEY: {v.name: v.version for v in versions}, PARTS_KEY: {v.name: v.parts for v in versions}}
                | ({"tuning": tuning} if tuning else {})
            )
        kept.scores.append(stored(kept.record, name, score.score, score.metadata or {}))
    except OSError as error:
        reason = f"{kept.record.case_id}#{kept.record.trial_index} {name}: cannot write {kept.scores.path}: {error}"
        with state.lock:
            state.lost_scores.append(reason)
        print(f"evals: a score was not kept: {reason}", file=sys.stderr, flush=True)


def forget_scores(keys: list[str] | None = None) -> None:
    """Stop waiting for the scores of these trials (or all): a scorer that raised never reports."""
    state = this_run().scoring
    with state.lock:
        for key in list(state.kept) if keys is None else keys:
            state.kept.pop(key, None)


def lost_scores() -> list[str]:
    """One reason per score this process could not keep in its run folder."""
    state = this_run().scoring
    with state.lock:
        return list(state.lost_scores)


def _note(score: Any, name: str, metadata: Mapping[str, Any] | None) -> None:
    key = (metadata or {}).get("trial_key")
    if not isinstance(score, Score) or not isinstance(key, str):
        return
    error = (score.metadata or {}).get("judge_error")
    state = this_run().scoring
    with state.lock:
        if error:
            state.judge_errors.setdefault(key, f"{name}: {error}")
        if changed_main_unapproved(name, score):
            reason = (score.metadata or {}).get("reason") or "score 0"
            state.main_damage.setdefault(key, {}).setdefault(name, str(reason))
        given = state.scores.setdefault(key, {})
        given[name] = score
        complete = len(given) >= len(SCORERS)
        if complete:
            del state.scores[key]
    _keep(score, name, key)
    if not complete:
        return
    found = trial_registry.lookup(key)  # the last reader: the registry drops the record now
    if found is not None:
        record, case = found
        cause = attribute(record, case, given)
        with state.lock:
            state.causes[key] = cause


def observed(scorer: Callable[..., Any]) -> Callable[..., Any]:
    """`scorer` under the same name, noting judge errors in what it returns and keeping it on disk."""
    name = scorer.__name__
    if inspect.iscoroutinefunction(scorer):

        async def run_async(metadata: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
            score = await scorer(metadata=metadata, **kwargs)
            _note(score, name, metadata)
            return score

        wrapper: Callable[..., Any] = run_async
    else:

        def run_sync(metadata: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
            score = scorer(metadata=metadata, **kwargs)
            _note(score, name, metadata)
            return score

        wrapper = run_sync
    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


def judge_error(trial_key: object) -> str | None:
    """The judge error noted for this trial, if any."""
    if not isinstance(trial_key, str):
        return None
    state = this_run().scoring
    with state.lock:
        return state.judge_errors.get(trial_key)


def main_damage(trial_key: object) -> str | None:
    """How this trial changed main without approval ("score: reason"), or None if it did not.

    The scorers finish in any order; the schema's reason is named before the data's, so two runs of
    the same trials print the same line."""
    if not isinstance(trial_key, str):
        return None
    state = this_run().scoring
    with state.lock:
        reasons = dict(state.main_damage.get(trial_key, {}))
    named = [name for name in GATE_SCORES if name in reasons]
    return f"{named[0]}: {reasons[named[0]]}" if named else None


def failure_cause(trial_key: object) -> Attribution | None:
    """Why this trial failed (`analysis.attribution`), or None: it passed, or its scores are not all in."""
    if not isinstance(trial_key, str):
        return None
    state = this_run().scoring
    with state.lock:
        return state.causes.get(trial_key)


def forget(keys: list[str]) -> None:
    """Drop what was kept for these trials once their experiment is reported."""
    state = this_run().scoring
    with state.lock:
        for key in keys:
            state.scores.pop(key, None)
            state.causes.pop(key, None)
