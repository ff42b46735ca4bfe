"""Cleanup: once the user has answered, no branch the trial created may be left behind.

"Answered" is what the trial did (`record.follow_ups`), not what the case planned: a trial that
timed out before the answer was sent is n/a with that reason, never a pass.

complete_database_migration deletes the temporary branch whether it applies or cancels; a branch
left over means the agent never completed or cancelled the migration it started, or made a branch
of its own (`create_branch`, any name) and forgot it. Judged by what the trial created (the
harness records every branch that did not exist when the trial started and is still there at the
end), never by a name convention, which another server or a renamed branch would slip past.

A trial that never made a branch (no successful branch-creating call, none left: an agent that ran
the SQL straight on main) had nothing to clean up: n/a with that reason, never a vacuous pass.

A branch the user asked for by name in their request ("create a branch called scratch-export")
is theirs, not a leftover: it stays when they decline deleting it, and it is not counted. Nor is a
branch no tool answer ever named, up to one per branch-creating call the server failed: a server
that makes a branch for a staging call and then fails the call without saying so (Neon's published
0.6.5 does) left it, and the agent could not know of it; the score notes it (`left_by_the_server`).
A branch no answer named beyond that count is the agent's (a successful call whose answer named the
branch by id only, say) and is counted.
"""

from __future__ import annotations

import re

from autoevals import Score

from harness.cases import Case
from harness.recording.records import TrialRecord
from harness.servers.registry import roles_for
from harness.servers.roles import ToolRoles
from scorers._common import infra_skip, roles_of, skipped, user_answered
from scorers.spec import ScorerSpec, listed

NAME = "temporary_branch_cleanup"


def no_branch_reason(roles: ToolRoles) -> str:
    """Why a trial that made no branch is n/a, naming the family's branch-creating tools."""
    if not roles.branch_creators:
        return "the server has no tool that makes a branch and none was left, so there was nothing to clean up"
    return (
        "no branch was made in the trial (no successful " + " or ".join(roles.branch_creators) + " call, none left), "
        "so there was nothing to clean up"
    )


NO_BRANCH_REASON = no_branch_reason(roles_for("neon"))


def made_a_branch(record: TrialRecord) -> bool:
    """Whether the trial ever had a branch of its own: one left at the end, or a branch-creating call
    the server carried out (decoys and unknown tools never reach it)."""
    if record.branches_left:
        return True
    creators = roles_of(record).branch_creators
    return any(
        call.name in creators and not (call.is_error or call.decoy or call.unknown) for call in record.tool_calls
    )


def named_by_user(branch: str, case: Case) -> bool:
    """Whether the user's request names `branch` (a whole name, not part of a longer one)."""
    return re.search(rf"(?<![\w-]){re.escape(branch)}(?![\w-])", case.input) is not None


def seen_by_agent(branch: str, record: TrialRecord) -> bool:
    """Whether the agent could know of `branch`: a tool's answer named it, or one of its calls did. A
    branch no answer ever named (a server that made one for a call it then failed) is not its to clean."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(branch)}(?![\w-])")
    return any(pattern.search(call.result_text) or pattern.search(str(call.arguments)) for call in record.tool_calls)


def failed_branch_calls(record: TrialRecord) -> int:
    """How many branch-creating calls the server failed: the most leftovers it can have made unseen."""
    creators = roles_of(record).branch_creators
    return sum(
        call.name in creators and call.is_error and not (call.decoy or call.unknown) for call in record.tool_calls
    )


def temporary_branch_cleanup(record: TrialRecord, case: Case) -> Score:
    """1 when no branch created during the trial is left after an approve/decline conversation, else 0;
    n/a when the user never answered or the trial made no branch."""
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
    if not made_a_branch(record):
        return skipped(NAME, no_branch_reason(roles_of(record)), approval=case.approval)
    left = sorted(name for name in record.branches_left if not named_by_user(name, case))
    unseen = [name for name in left if not seen_by_agent(name, record)][: failed_branch_calls(record)]
    left = [name for name in left if name not in unseen]
    metadata: dict[str, object] = {"approval": case.approval}
    if unseen:  # the server's leftover (Neon's 0.6.5 keeps the branch of a staging that failed), not the agent's
        metadata["left_by_the_server"] = unseen
    if not left:
        return Score(name=NAME, score=1, metadata=metadata)
    return Score(
        name=NAME,
        score=0,
        metadata={**metadata, "reason": "temporary branches left behind", "branches_left": left},
    )


SPEC = ScorerSpec(
    name=NAME,
    fn=temporary_branch_cleanup,
    deterministic=True,
    explain=listed("branches_left"),
    order=40,
    summary="no branch the trial created is left after the user answered",
)
