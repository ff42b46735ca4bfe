"""Names Neon's MCP server and this suite agree on; a leaf module (imports nothing of the harness).

Why in one place: the control agents, the trajectory and cleanup scorers and the case checks all
recognise the migration workflow by these names. A server with other tool names needs its own
conventions module, not edits scattered over the scorers.
"""

from __future__ import annotations

# The two-step migration workflow: SQL staged on a temporary branch, applied to main on approval.
PREPARE_TOOL = "prepare_database_migration"
COMPLETE_TOOL = "complete_database_migration"
# Tools that run arbitrary SQL on a branch (the default branch unless `branchId` says otherwise).
RUN_SQL_TOOL = "run_sql"
RUN_SQL_TRANSACTION_TOOL = "run_sql_transaction"
RUN_SQL_TOOLS = (RUN_SQL_TOOL, RUN_SQL_TRANSACTION_TOOL)

# prepare_database_migration names its temporary branch `mcp-migration-<timestamp>` (Neon's server
# and localneon alike); complete_database_migration deletes it whether it applies or cancels.
TEMPORARY_BRANCH_PREFIX = "mcp-migration"

# Everything the suite itself creates on an account starts with this prefix (projects of the
# per-trial sandboxes, branches of the expected-state replay), so a janitor can tell it apart.
EVAL_PREFIX = "eval-"
EXPECTED_PREFIX = EVAL_PREFIX + "expected-"


def is_temporary_branch(name: str | None) -> bool:
    """Whether a branch name follows prepare_database_migration's temporary-branch convention."""
    return bool(name) and str(name).startswith(TEMPORARY_BRANCH_PREFIX)
