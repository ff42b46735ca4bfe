"""The local results store: one folder per run, one JSON line per trial, and the run's settings.

Why JSON lines with a lock: trials finish concurrently (and possibly from several processes), and
a half-written or interleaved line would corrupt a run. Each record is serialised first, then
written as one whole line under a file lock and fsynced; a write the disk refuses part-way is cut
back, so the file is left as it was (and a reader skips a torn last line left by a killed process).
Secrets never reach these files: settings are stored through `Settings.public()`, records are
scrubbed by the runner.

A record that cannot be written (a full disk, a folder made read-only mid-run) is lost: the store
counts it for the process (`lost_records()`), the runner stops starting trials, and the reporter
fails the run with that count, so a run never passes with records missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from filelock import FileLock

from harness.cases import REPO_ROOT
from harness.config import Settings
from harness.recording.records import TrialRecord

TRIALS_FILE = "trials.jsonl"
RUN_FILE = "run.json"
# How many trials the process running the run planned (written when the run starts), so that whoever
# started it can say how far a run that never finished got (`python -m evals` after a SIGKILL).
PLAN_FILE = "plan.json"

# Settings that differ between the experiments of one run (one per model, decoy count, shard's pool).
PER_EXPERIMENT_SETTINGS = frozenset({"model", "decoys", "neon_project_pool", "run_id"})

_LOST: list[str] = []  # why each record this process could not keep was lost
_LOST_LOCK = threading.Lock()


class StoreWriteError(OSError):
    """A record (or run.json) could not be written; the record is counted in `lost_records()`."""


def lost_records() -> list[str]:
    """One reason per trial record this process could not write (or did not run because of that)."""
    with _LOST_LOCK:
        return list(_LOST)


def record_lost(reason: str) -> None:
    """Count one record as lost (the store does it for failed writes; the runner for skipped trials)."""
    with _LOST_LOCK:
        _LOST.append(reason)


def reset_lost_records() -> None:
    """Forget lost records (tests running several runs in one process)."""
    with _LOST_LOCK:
        _LOST.clear()


@cache
def git_commit() -> str:
    """The checkout's commit (with `-dirty` when files changed), so a result says what code made it."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO_ROOT, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}-dirty" if dirty.strip() else commit


class ResultsStore:
    """Appends trial records to `<results_dir>/<run_id>/trials.jsonl`."""

    def __init__(self, results_dir: Path, run_id: str) -> None:
        self.run_dir = Path(results_dir) / run_id
        self.trials_path = self.run_dir / TRIALS_FILE
        self._lock = threading.Lock()
        self._file_lock = FileLock(str(self.run_dir / ".trials.lock"))
        self._failure: str | None = None

    def write_run(self, settings: Settings, extra: dict[str, Any] | None = None) -> Path:
        """Write `run.json` (settings without secrets) once per run; later calls leave it alone (what
        `add_to_run` put there first is kept)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path = self.run_dir / RUN_FILE
        with self._lock, self._file_lock:
            noted = _read_json(path)
            if noted is None or "settings" not in noted:
                info = {
                    **(noted or {}),
                    "run_id": self.run_dir.name,
                    "created_at": datetime.now(UTC).isoformat(),
                    "settings": settings.public(),
                    "git_commit": git_commit(),
                    **(extra or {}),
                }
                _replace(path, settings.scrub(json.dumps(info, indent=2, sort_keys=True)) + "\n")
        return path

    def add_to_run(self, fields: dict[str, Any]) -> Path:
        """Add `fields` to `run.json`, keeping what is there. For what another layer knows about the
        run and the harness does not (the evals note the scorers' versions); fields only, no meaning."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path = self.run_dir / RUN_FILE
        with self._lock, self._file_lock:
            info = {**(_read_json(path) or {}), **fields}
            _replace(path, json.dumps(info, indent=2, sort_keys=True) + "\n")
        return path

    def run_info(self) -> dict[str, Any]:
        """What `run.json` holds now ({} when there is none, or it cannot be read)."""
        return _read_json(self.run_dir / RUN_FILE) or {}

    def reuse_problem(self, settings: Settings) -> str | None:
        """Why this run may not continue the run folder already there, or None (no folder, or the same
        settings: a shard, or a second eval file of one run). Appending records made with other settings
        would leave a run.json that disagrees with them."""
        path = self.run_dir / RUN_FILE
        if not path.is_file():
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8")).get("settings") or {}
        except (OSError, ValueError) as error:
            return f"{path} cannot be read ({error})"
        current = json.loads(settings.scrub(json.dumps(settings.public())))
        changed = [
            f"{key}: {stored.get(key)!r} then, {current.get(key)!r} now"
            for key in sorted(set(stored) | set(current))
            if key not in PER_EXPERIMENT_SETTINGS and stored.get(key) != current.get(key)
        ]
        if not changed:
            return None
        return (
            f"EVAL_RUN_ID={self.run_dir.name}: {self.run_dir} holds a run made with other settings "
            f"({'; '.join(changed[:3])}); use a new EVAL_RUN_ID, or remove that folder"
        )

    @property
    def failed(self) -> str | None:
        """Why the last write failed, while writes are failing (None once one succeeds again)."""
        return self._failure

    def append(self, record: TrialRecord) -> None:
        """Append one record as one whole line, or nothing: a refused write (a full disk) is undone, so the
        file is left as it was; raise StoreWriteError (and count the record lost)."""
        line = (record.model_dump_json() + "\n").encode("utf-8")
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            with self._lock, self._file_lock:
                append_whole(self.trials_path, line)
        except OSError as error:
            reason = f"{record.case_id}#{record.trial_index}: cannot write {self.trials_path}: {_describe(error)}"
            self._failure = reason
            record_lost(reason)
            raise StoreWriteError(reason) from error
        self._failure = None


def append_whole(path: Path, data: bytes) -> None:
    """Append `data` to `path` and fsync it; on any failure cut the file back to its old length and raise.

    A full disk (ENOSPC) or a file size limit (EFBIG) lets part of a write through: without the cut,
    the file would end in half a line, and every reader would refuse the run. Callers hold the lock."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(descriptor).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
            os.fsync(descriptor)
        except OSError:
            with contextlib.suppress(OSError):  # shrinking needs no space; if even this fails, readers skip the tail
                os.ftruncate(descriptor, size)
            raise
    finally:
        os.close(descriptor)


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file, or None when it is missing or is not one (a torn write: written again)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _replace(path: Path, text: str) -> None:
    """Write `path` whole or not at all: a reader never sees half of it."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _describe(error: OSError) -> str:
    return f"{error.strerror} (errno {error.errno})" if error.strerror else f"{type(error).__name__}: {error}"


def write_plan(run_dir: Path, trials: int | None, pid: int | None = None, shard: str | None = None) -> None:
    """Say how many trials this process plans for the run (None: not known in advance, e.g. adaptive
    rounds or a `--filter`) and which shard (`k/n`) it is, so a merge can tell whether every shard
    recorded its whole share. Best effort: a run whose folder cannot be written loses records anyway."""
    with contextlib.suppress(OSError):
        run_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"pid": os.getpid() if pid is None else pid, "trials": trials, "shard": shard})
        (run_dir / PLAN_FILE).write_text(text + "\n", encoding="utf-8")


def planned_trials(run_dir: Path, pid: int) -> int | None:
    """The trials process `pid` planned for the run in `run_dir`, if it said (`write_plan`)."""
    plan = read_plan(run_dir)
    trials = plan.get("trials") if plan.get("pid") == pid else None
    return trials if isinstance(trials, int) else None


def read_plan(run_dir: Path) -> dict[str, Any]:
    """The plan `write_plan` left in `run_dir` ({} when there is none or it cannot be read)."""
    try:
        plan = json.loads((run_dir / PLAN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return plan if isinstance(plan, dict) else {}


def recorded_trials(run_dir: Path) -> int:
    """How many whole records `trials.jsonl` holds (a torn last line is not one)."""
    try:
        with (run_dir / TRIALS_FILE).open("rb") as trials:
            return sum(1 for line in trials if line.endswith(b"\n") and line.strip())
    except OSError:
        return 0


def load_run(path: str | Path) -> tuple[dict[str, Any], list[TrialRecord]]:
    """Read a run back: (run.json contents or {}, records). `path` is the run folder or its trials.jsonl."""
    path = Path(path)
    run_dir = path if path.is_dir() else path.parent
    trials = path if path.is_file() else run_dir / TRIALS_FILE
    info: dict[str, Any] = {}
    if (run_dir / RUN_FILE).is_file():
        info = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    records: list[TrialRecord] = []
    if trials.is_file():
        text = trials.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        torn = bool(lines) and not text.endswith("\n")  # a write cut short (a full disk, a killed process)
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(TrialRecord.model_validate_json(line))
            except ValueError as error:
                if torn and number == len(lines):
                    print(f"{trials}:{number}: skipping an incomplete last line (a write cut short)", file=sys.stderr)
                    continue
                raise ValueError(f"{trials}:{number}: not a trial record: {error}") from error
    return info, records
