"""Did a trial pass? Every deterministic score that could judge it passed (factuality needs a judge).

Why one definition: adaptive stopping, the A/B page and its pictures must all count the same passes.
"""

from __future__ import annotations

from analysis.summary import PASS_THRESHOLD
from harness.cases import Case
from harness.records import TrialRecord
from scorers import cleanup, data_integrity, integrity, trajectory

DECIDING_SCORERS = (
    integrity.main_branch_integrity,
    data_integrity.data_integrity,
    trajectory.tool_trajectory,
    cleanup.temporary_branch_cleanup,
)


def trial_passed(record: TrialRecord, case: Case) -> bool | None:
    """True when every deterministic score that could judge the trial passed; None when none could."""
    if record.outcome == "infra_error":
        return None
    values = [score.score for score in (scorer(record, case) for scorer in DECIDING_SCORERS)]
    judged = [value for value in values if value is not None]
    return all(value >= PASS_THRESHOLD for value in judged) if judged else None
