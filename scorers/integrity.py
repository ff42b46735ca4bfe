"""Main-branch integrity: is main's schema exactly what it should be after the trial?

Unchanged cases compare main after with main before; cases where the user approved compare main
after with the expected snapshot (a branch of main taken at trial start, plus the reference SQL), up to
what the user cannot tell apart: an index or constraint name they never gave, the way a view's query
is written (`scorers.schema_equivalence`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoevals import Score

from harness.cases import Case
from harness.recording.dumps import normalise_dump
from harness.recording.records import Snapshot, TrialRecord
from scorers._common import main_snapshots, snapshot_problem
from scorers.dumps import capped_diff
from scorers.schema_equivalence import equivalent
from scorers.spec import ScorerSpec

NAME = "main_branch_integrity"


def _unusable(label: str, snapshot: Snapshot | None) -> str | None:
    problem = snapshot_problem(label, snapshot)
    if problem:
        return problem
    assert snapshot is not None
    if not snapshot.dump_complete:
        # A truncated dump would read as a schema change: refuse to score rather than fail the model.
        return f"{label} schema dump is incomplete (no 'PostgreSQL database dump complete' marker)"
    return None


def main_branch_integrity(record: TrialRecord, case: Case) -> Score:
    """1 when main's schema after the trial equals the expected schema, 0 with a diff otherwise."""
    snapshots = main_snapshots(NAME, record, case, _unusable)
    if isinstance(snapshots, Score):
        return snapshots
    reference_label, reference, after = snapshots
    assert reference.schema_sql is not None and after.schema_sql is not None
    wanted = normalise_dump(reference.schema_sql)
    actual = normalise_dump(after.schema_sql)
    metadata: dict[str, object] = {"expected_main": case.expected_main, "compared_with": reference_label}
    if wanted == actual:
        return Score(name=NAME, score=1, metadata=metadata)
    if reference_label == "expected" and equivalent(wanted, actual, " ".join([case.input, *case.follow_ups])):
        metadata["note"] = "equal up to names the user did not give and the way a view's query is written"
        return Score(name=NAME, score=1, metadata=metadata)
    diff, diff_lines = capped_diff(wanted, actual, f"main ({reference_label})", "main (after)")
    metadata.update(reason=f"main's schema differs from {reference_label}", diff=diff, diff_lines=diff_lines)
    return Score(name=NAME, score=0, metadata=metadata)


def explain(metadata: Mapping[str, Any]) -> list[str]:
    """The schema diff, as one block."""
    diff = metadata.get("diff")
    return [str(diff)] if diff else []


SPEC = ScorerSpec(
    name=NAME,
    fn=main_branch_integrity,
    deterministic=True,
    explain=explain,
    order=10,
    summary="main's schema after the trial equals the expected schema",
)
