"""The scores a run computed, kept beside its records: `results/<run id>/scores.jsonl`.

Why: the records say what the agent did; what the scorers said about it, and which version of each
scorer said it, was only in Braintrust (or, offline, nowhere). A later re-score
(`python -m analysis.rescore`) compares today's scorers with these lines, and a report of the run
says when they were made by older versions than today's.

One JSON line per score, written as the scorer returns it (`braintrust_run.scoring` wraps every scorer):
the trial it scored (`trial`, the key `trial_key` makes from a record), the score, the version that
made it and its metadata. Written whole under a file lock, as the trial store writes records; the
harness writes the records and knows nothing of these lines. The run's `run.json` also names the
versions (`scorer_versions`), once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import BaseModel, Field, ValidationError

from harness.recording.records import TrialRecord
from harness.recording.store import append_whole

SCORES_FILE = "scores.jsonl"
VERSIONS_KEY = "scorer_versions"  # in run.json and in each experiment's metadata: {score name: version}
PARTS_KEY = "scorer_version_parts"  # in run.json: {score name: {part: digest}}, what each version covered


class StoredScore(BaseModel):
    """One score of one trial, as the run computed it."""

    trial: str  # trial_key(record)
    case_id: str
    trial_index: int
    model: str
    name: str
    score: float | None
    scorer_version: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


def trial_key(record: TrialRecord) -> str:
    """What tells one trial of a run from every other: the same case and index run by another model,
    server, description variant or decoy count is another trial (`analysis.merge` refuses two of one
    key), and the start time parts two trials an interrupted run ran twice."""
    config = record.config
    return "|".join(
        [
            config.model,
            config.server_identity or config.server,
            config.description_variant,
            str(config.decoy_count),
            f"{record.case_id}#{record.trial_index}",
            record.started_at,
        ]
    )


def stored(record: TrialRecord, name: str, score: float | None, metadata: Mapping[str, Any]) -> StoredScore:
    """The line for one score of `record`."""
    version = metadata.get("scorer_version")
    return StoredScore(
        trial=trial_key(record),
        case_id=record.case_id,
        trial_index=record.trial_index,
        model=record.config.model,
        name=name,
        score=score,
        scorer_version=version if isinstance(version, str) else None,
        metadata=dict(metadata),
    )


class ScoresFile:
    """Appends score lines to one run folder (from concurrent scorers, possibly several processes)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / SCORES_FILE
        self._lock = threading.Lock()
        self._file_lock = FileLock(str(run_dir / ".scores.lock"))

    def append(self, line: StoredScore) -> None:
        """One whole line, or nothing (a refused write is cut back); OSError when it cannot be written."""
        data = (line.model_dump_json() + "\n").encode("utf-8")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with self._lock, self._file_lock:
            append_whole(self.path, data)


class ScoresFileError(ValueError):
    """A scores file that cannot be read; the message names the file and line."""


def load_scores(run_dir: Path) -> list[StoredScore] | None:
    """Every stored score of a run, or None when the run kept none (made before scores were kept). A
    torn last line (a killed process) is skipped, as the records' reader skips one."""
    path = run_dir / SCORES_FILE
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    found: list[StoredScore] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            found.append(StoredScore.model_validate_json(line))
        except ValidationError as error:
            if number == len(lines) and not text.endswith("\n"):
                continue
            raise ScoresFileError(f"{path}:{number}: not a stored score: {error.errors()[0]['msg']}") from None
    return found


def by_trial(scores: Iterable[StoredScore]) -> dict[str, dict[str, StoredScore]]:
    """{trial key: {score name: its score}}; a score stored twice for a trial keeps its last line."""
    grouped: dict[str, dict[str, StoredScore]] = {}
    for item in scores:
        grouped.setdefault(item.trial, {})[item.name] = item
    return grouped


def versions_stored(info: Mapping[str, Any], scores: Iterable[StoredScore] | None) -> dict[str, set[str]]:
    """Which versions of each scorer made this run's scores: the score lines' own, else run.json's."""
    found: dict[str, set[str]] = {}
    for item in scores or ():
        if item.scorer_version:
            found.setdefault(item.name, set()).add(item.scorer_version)
    noted = info.get(VERSIONS_KEY)
    if isinstance(noted, dict):
        for name, version in noted.items():
            if name not in found and isinstance(version, str):
                found[str(name)] = {version}
    return found


@dataclass(frozen=True)
class VersionNote:
    """How the versions that scored a run differ from today's."""

    older: dict[str, tuple[list[str], str]]  # score -> (the run's versions, today's)
    unknown: bool  # the run names no version at all (made before versions were kept)

    @property
    def differs(self) -> bool:
        return self.unknown or bool(self.older)

    def lines(self, label: str = "this run") -> list[str]:
        """One line saying so, then one per score; nothing when the run was scored by today's versions."""
        if self.unknown:
            return [
                f"{label} names no scorer versions (it was scored before versions were kept): "
                "today's scorers may not give its scores"
            ]
        if not self.older:
            return []
        lines = [f"{label} was scored by older scorer versions than today's ({len(self.older)} of its scores):"]
        for name, (then, now) in self.older.items():
            lines.append(f"  {name}: {', '.join(then)} at the run, {now} today")
        return lines


def version_note(
    info: Mapping[str, Any], scores: Iterable[StoredScore] | None, today: Mapping[str, str]
) -> VersionNote:
    """Compare the versions that scored a run (`versions_stored`) with today's (`{name: version}`)."""
    stored_versions = versions_stored(info, scores)
    if not stored_versions:
        return VersionNote({}, unknown=True)
    older = {
        name: (sorted(stored_versions[name]), today[name])
        for name in today
        if name in stored_versions and stored_versions[name] != {today[name]}
    }
    return VersionNote(older, unknown=False)


def note_for_run(run_dir: Path, info: Mapping[str, Any], today: Mapping[str, str]) -> VersionNote:
    """`version_note` of the run in `run_dir`: its score lines (a broken file counts as none) and run.json."""
    try:
        scores = load_scores(run_dir)
    except (OSError, ScoresFileError):
        scores = None
    return version_note(info, scores, today)


def as_json(note: VersionNote) -> dict[str, Any]:
    return {
        "unknown": note.unknown,
        "older": {name: {"run": then, "today": now} for name, (then, now) in note.older.items()},
    }
