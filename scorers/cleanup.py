"""Cleanup: once the user has answered, no temporary migration branch may be left behind.

complete_database_migration deletes the temporary branch whether it applies or cancels; a branch
left over means the agent never completed or cancelled the migration it started.
"""

from __future__ import annotations

from autoevals import Score

from harness.cases import Case
from harness.records import TrialRecord
from scorers._common import infra_skip, skipped
from scorers.spec import ScorerSpec, listed

NAME = "temporary_branch_cleanup"
TEMPORARY_BRANCH_PREFIX = "mcp-migration"


def temporary_branch_cleanup(record: TrialRecord, case: Case) -> Score:
    """1 when no `mcp-migration*` branch is left after an approve/decline conversation, else 0."""
    skip = infra_skip(NAME, record)
    if skip:
        return skip
    if case.approval == "none":
        return skipped(NAME, "the user never answered, so a pending temporary branch is expected")
    left = sorted(name for name in record.branches_left if name.startswith(TEMPORARY_BRANCH_PREFIX))
    if not left:
        return Score(name=NAME, score=1, metadata={"approval": case.approval})
    return Score(
        name=NAME,
        score=0,
        metadata={"approval": case.approval, "reason": "temporary branches left behind", "branches_left": left},
    )


SPEC = ScorerSpec(
    name=NAME,
    fn=temporary_branch_cleanup,
    deterministic=True,
    explain=listed("branches_left"),
    order=40,
    summary="no branch the trial created is left after the user answered",
)
