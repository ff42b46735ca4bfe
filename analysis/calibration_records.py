"""The judge calibration's results on disk: `results/<run id>/judge_calibration.jsonl` + `calibration.json`.

Why beside the trial records: a calibration run is a run like any other, kept in the same results
folder, so `python -m analysis.calibrate RUN` can re-read it (and compare judges) without
talking to Braintrust. One JSON line per verdict, written whole under a file lock, as the trial
store does; the judge's key never reaches these files (only `JudgeSettings.describe()` does).
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import BaseModel, ValidationError

from harness.environment import host

VERDICTS_FILE = "judge_calibration.jsonl"
INFO_FILE = "calibration.json"


class VerdictRecord(BaseModel):
    """One judge verdict on one labelled example (one of its repeats)."""

    example_id: str
    label: str
    choice: str | None  # None when the judge call failed
    repeat: int = 1  # which judgement of the example, from 1 (a run from before repeats holds only 1)
    cache_hit: bool = False  # a cache on the judge's route answered, not the model (`x-bt-cached: HIT`)
    error: str | None = None
    rationale: str = ""
    traps: list[str] = []
    judge_model: str
    judge_provider: str = ""
    judge_base_url: str = ""
    judge_template: str  # name@version
    # The factuality scorer's version that judged it (its code and the template's bytes, `scorers.versions`);
    # "" in calibrations made before versions were kept.
    judge_version: str = ""


class VerdictStore:
    """Appends verdicts to one run folder (from concurrent tasks, possibly several processes)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / VERDICTS_FILE
        self._lock = threading.Lock()
        self._file_lock = FileLock(str(run_dir / ".calibration.lock"))

    def write_info(self, info: dict[str, Any]) -> None:
        """`calibration.json` once per run (what was calibrated, when, from which commit)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path = self.run_dir / INFO_FILE
        with self._lock, self._file_lock:
            if path.exists():
                return
            content = {"run_id": self.run_dir.name, "created_at": datetime.now(UTC).isoformat(), **info}
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(temporary, path)

    def append(self, record: VerdictRecord) -> None:
        line = record.model_dump_json() + "\n"
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with self._lock, self._file_lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


class CalibrationRunError(ValueError):
    """A run that cannot be read as a calibration; the message names the path."""


def resolve_run(run: str, results_dir: Path | None = None) -> Path:
    """A run folder from a folder, its `judge_calibration.jsonl`, or a run id under the results folder."""
    given = Path(run)
    if given.is_file():
        return given.parent
    if given.is_dir():
        return given
    base = results_dir or host().results_dir
    if (base / run).is_dir():
        return base / run
    raise CalibrationRunError(f"{run}: no such run folder, file, or run id under {base}/")


def load_verdicts(run_dir: Path) -> tuple[dict[str, Any], list[VerdictRecord]]:
    """(calibration.json or {}, verdicts); a missing, empty or corrupt file names itself."""
    path = run_dir / VERDICTS_FILE
    if not path.is_file():
        raise CalibrationRunError(f"{run_dir}: no {VERDICTS_FILE} (was it a judge calibration run?)")
    info: dict[str, Any] = {}
    if (run_dir / INFO_FILE).is_file():
        info = json.loads((run_dir / INFO_FILE).read_text(encoding="utf-8"))
    records: list[VerdictRecord] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(VerdictRecord.model_validate_json(line))
        except ValidationError as error:
            raise CalibrationRunError(f"{path}:{number}: not a verdict record: {error.errors()[0]['msg']}") from None
    if not records:
        raise CalibrationRunError(f"{path}: no verdicts")
    return info, records
