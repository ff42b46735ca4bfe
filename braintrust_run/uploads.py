"""What a trial uploads to Braintrust, and how many uploaded rows were lost.

Lean: the root span's metadata holds only what explains a score at a glance: the case, the
outcome, the tools in order, the error. The scores' own metadata holds the failing checks and the
diff; the full record stays in `results/` and, for the scorers of this process, in
`harness.recording.trial_registry`. The SDK also copies the trial's input, output, expected answer and
metadata into the input of every score span; a span customizer (the SDK's export hook) replaces
that copy with a reference to the trial, so each trial's content is sent once.

Lost: the SDK's background logger retries a refused or failed upload, then drops the batch with a
line on stderr and no error. With `BRAINTRUST_FAILED_PUBLISH_PAYLOADS_DIR` set it writes each
dropped batch to that folder first. The wiring points it at `results/<run>/braintrust-failed/`
(unless the user chose a folder), so the reporter can count the rows that never arrived and fail
the run, and the rows are kept on disk to be sent again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from braintrust import SpanCustomizer, SpanExportData, set_span_customizers

from braintrust_run.run_state import this_run
from braintrust_run.sdk_private import background_logger, span_customizers
from braintrust_run.settings import current
from harness.recording.records import TrialRecord

ERROR_CAP = 600  # characters of a trial's error kept in metadata
FAILED_DIR_NAME = "braintrust-failed"


def _capped(text: str | None) -> str | None:
    return text[:ERROR_CAP] + " [truncated]" if text and len(text) > ERROR_CAP else text


def trial_metadata(record: TrialRecord) -> dict[str, Any]:
    """The part of a trial record worth uploading with every span of its trace."""
    return {
        "trial_index": record.trial_index,
        "case_hash": record.case_hash,
        "outcome": record.outcome,
        "error": _capped(record.error),
        "cleanup_error": _capped(record.cleanup_error),  # a sandbox left behind: the run gate fails the run
        "tool_sequence": [call.name for call in record.tool_calls],
        "turns": record.turns,
        "cost_usd": record.cost_usd,
        "duration_s": record.duration_s,
        "queue_s": record.queue_s,  # waiting for a model slot: not the model's time
        "answered_by": record.answered_by,  # the model the responses named (a local server answers to any name)
        "started_at": record.started_at,  # with case id and index, keys the judge's spend (scorers.judge_client)
        "usage": record.usage.model_dump(mode="json"),  # a few counts: the cache hit ratio per experiment
        "tool_view_hash": record.config.tool_view_hash,  # trials with one hash share their cacheable prefix
    }


class ScoreInputByReference(SpanCustomizer):
    """Score spans name their trial instead of repeating its input, output and metadata."""

    def on_span_export(self, data: SpanExportData) -> SpanExportData:
        attributes = data.get("span_attributes") or {}
        scored = data.get("input")
        if attributes.get("type") == "score" and isinstance(scored, dict) and "metadata" in scored:
            metadata = scored.get("metadata") or {}
            data["input"] = {key: metadata.get(key) for key in ("case_id", "trial_index", "trial_key")}
        return data


def install_lean_score_inputs() -> None:
    """Add the score-input customizer (once) to whatever customizers are already set."""
    current = span_customizers()
    if not any(isinstance(customizer, ScoreInputByReference) for customizer in current):
        set_span_customizers([*current, ScoreInputByReference()])


def watch_failed_uploads(run_dir: Path) -> Path | None:
    """Make the SDK keep the batches it drops in a folder we can count; returns that folder."""
    run = this_run()
    if run.failed_uploads is not None:
        return run.failed_uploads
    logger = background_logger()
    if not hasattr(logger, "failed_publish_payloads_dir"):
        print("evals: this braintrust SDK cannot report dropped uploads; lost rows go uncounted", file=sys.stderr)
        return None
    chosen = logger.failed_publish_payloads_dir or current().failed_uploads_dir
    folder = Path(chosen) if chosen else run_dir / FAILED_DIR_NAME
    logger.failed_publish_payloads_dir = str(folder)
    run.failed_uploads = folder
    return folder


def _rows_in(path: Path) -> int:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 1  # a payload we cannot read still means something was lost
    if isinstance(document, dict) and isinstance(document.get("data"), dict):
        document = document["data"]  # dropped-from-queue dumps wrap the payload
    rows = document.get("rows") if isinstance(document, dict) else None
    return len(rows) if isinstance(rows, list) else 1


def lost_rows() -> tuple[int, Path | None]:
    """Rows the SDK dropped during this process (after flushing what is pending), and where they are."""
    run = this_run()
    if run.failed_uploads is None:
        return 0, None
    try:
        background_logger().flush()
    except Exception as error:  # the dropped batches are counted from their files below
        print(f"evals: flushing Braintrust uploads failed: {error}", file=sys.stderr)
    folder = run.failed_uploads
    if not folder.is_dir():
        return 0, folder
    files = [path for path in folder.glob("*.json") if path.stat().st_mtime >= run.started_at - 1]
    return sum(_rows_in(path) for path in files), folder
