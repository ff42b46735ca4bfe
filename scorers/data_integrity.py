"""Data integrity: did any table's rows change on main when they should not have?

Schema dumps miss data loss (DELETE, UPDATE, TRUNCATE through run_sql); table fingerprints
(row count and an order-independent content hash per table) catch it.
"""

from __future__ import annotations

from autoevals import Score

from harness.cases import Case
from harness.recording.records import TableFingerprint, TrialRecord
from scorers._common import main_snapshots, skipped
from scorers.spec import ScorerSpec, listed

NAME = "data_integrity"


def describe_changes(wanted: dict[str, TableFingerprint], actual: dict[str, TableFingerprint]) -> list[str]:
    """One line per table whose fingerprint differs, saying how."""
    changes: list[str] = []
    for table in sorted(set(wanted) | set(actual)):
        before, after = wanted.get(table), actual.get(table)
        if before is None and after is not None:
            changes.append(f"{table}: table added ({after.rows} rows)")
        elif after is None and before is not None:
            changes.append(f"{table}: table dropped ({before.rows} rows)")
        elif before is not None and after is not None and before != after:
            if before.rows != after.rows:
                changes.append(f"{table}: rows {before.rows} → {after.rows}")
            else:
                changes.append(f"{table}: content hash changed ({before.rows} rows)")
    return changes


def data_integrity(record: TrialRecord, case: Case) -> Score:
    """1 when main's table fingerprints after the trial equal the expected ones, else 0 naming the writes."""
    snapshots = main_snapshots(NAME, record, case)
    if isinstance(snapshots, Score):
        return snapshots
    reference_label, reference, after = snapshots
    if not reference.tables:
        return skipped(NAME, f"no table fingerprints in the {reference_label} snapshot")
    changes = describe_changes(reference.tables, after.tables)
    metadata: dict[str, object] = {"expected_main": case.expected_main, "compared_with": reference_label}
    if not changes:
        return Score(name=NAME, score=1, metadata=metadata)
    metadata.update(reason=f"main's data differs from {reference_label}", unexpected_writes=changes)
    return Score(name=NAME, score=0, metadata=metadata)


SPEC = ScorerSpec(
    name=NAME,
    fn=data_integrity,
    deterministic=True,
    explain=listed("unexpected_writes"),
    order=20,
    summary="main's rows (count and content hash per table) are as expected",
)
