"""Cleanup: once the user has answered, no branch the trial created may be left behind.

"Answered" is what the trial did (`record.follow_ups`), not what the case planned: a trial that
timed out before the answer was sent is n/a with that reason, never a pass.

complete_database_migration deletes the temporary branch whether it applies or cancels; a branch
left over means the agent never completed or cancelled the migration it started, or made a branch
of its own (`create_branch`, any name) and forgot it. Judged by what the trial created (the
harness records every branch that did not exist when the trial started and is still there at the
end), never by a name convention, which another server or a renamed branch would slip past.
"""

from __future__ import annotations

from autoevals import Score

from harness.cases import Case
from harness.recording.records import TrialRecord
from scorers._common import infra_skip, skipped, user_answered
from scorers.spec import ScorerSpec, listed

NAME = "temporary_branch_cleanup"


def temporary_branch_cleanup(record: TrialRecord, case: Case) -> Score:
    """1 when no branch created during the trial is left after an approve/decline conversation, else 0."""
    skip = infra_skip(NAME, record)
    if skip:
        return skip
    if case.approval == "none":
        return skipped(NAME, "the case never answers, so a pending temporary branch is expected")
    if not user_answered(record, case):  # what happened, not what the case planned
        sent = f"{len(record.follow_ups)} of {len(case.follow_ups)} follow-ups sent"
        return skipped(
            NAME,
            f"the user never answered ({sent}; outcome {record.outcome}), so a pending temporary branch is expected",
        )
    left = sorted(record.branches_left)
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
