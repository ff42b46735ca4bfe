"""Names Neon's MCP server and this suite agree on (it imports the roles type and the terms the
cases are written in, which are Neon's: `harness.cases`).

Why in one place: the control agents, the trajectory and cleanup scorers and the case checks all
recognise the migration workflow by these names. A server with other tool names has its own
conventions module and `ToolRoles` (`ROLES` here; DBHub's in `harness.servers.dbhub.conventions`),
which the scorers get through `harness.servers.registry.roles_for`, not edits scattered over them.
"""

from __future__ import annotations

from harness.cases import DEFAULT_DATABASE, LIST_BRANCHES_TOOL, PREPARE_TOOL
from harness.servers.roles import ToolRoles

__all__ = ("DEFAULT_DATABASE", "LIST_BRANCHES_TOOL", "PREPARE_TOOL")  # the cases' terms are Neon's (harness.cases)

# The two-step migration workflow: SQL staged on a temporary branch (PREPARE_TOOL), applied on approval.
COMPLETE_TOOL = "complete_database_migration"
# Tools that run arbitrary SQL on a branch (the default branch unless `branchId` says otherwise).
RUN_SQL_TOOL = "run_sql"
RUN_SQL_TRANSACTION_TOOL = "run_sql_transaction"
RUN_SQL_TOOLS = (RUN_SQL_TOOL, RUN_SQL_TRANSACTION_TOOL)
# How a careful agent discards a migration where complete cannot cancel (0.6.5: no applyChanges).
DELETE_BRANCH_TOOL = "delete_branch"
EXPLAIN_TOOL = "explain_sql_statement"
# The two-step query tuning: a plan studied on a temporary branch, statements applied on approval.
PREPARE_TUNING_TOOL = "prepare_query_tuning"
COMPLETE_TUNING_TOOL = "complete_query_tuning"

# Neon's own annotations of its tools (HEAD, which declares them), for a server that declares none
# (0.6.5 lists no annotations at all): which tools only read, and which destroy. A tool in neither
# set changes something without destroying it (create_branch, prepare_database_migration, ...).
DESTRUCTIVE_TOOLS = frozenset(
    {
        "delete_project",
        "run_sql",
        "run_sql_transaction",
        "complete_database_migration",
        "delete_branch",
        "reset_from_parent",
        "configure_neon_auth",
        "complete_query_tuning",
    }
)
CHANGING_TOOLS = frozenset(
    {
        "create_project",
        "create_branch",
        "prepare_database_migration",
        "prepare_query_tuning",
        "provision_neon_auth",
        "provision_neon_data_api",
    }
)
READ_ONLY_TOOLS = frozenset(
    {
        "list_projects",
        "list_organizations",
        "list_shared_projects",
        "describe_project",
        "describe_table_schema",
        "get_database_tables",
        "describe_branch",
        "get_connection_string",
        "list_branch_computes",
        EXPLAIN_TOOL,
        "list_slow_queries",
        "compare_database_schema",
        "get_neon_auth_config",
        "search",
        "fetch",
        "query_logs",
        "list_log_fields",
        "list_log_field_values",
        "list_docs_resources",
        "get_doc_resource",
    }
)

# prepare_database_migration names its temporary branch `mcp-migration-<timestamp>` (Neon's server
# and localneon alike); complete_database_migration deletes it whether it applies or cancels.
TEMPORARY_BRANCH_PREFIX = "mcp-migration"

# Everything the suite itself creates on an account starts with this prefix (projects of the
# per-trial sandboxes, branches of the expected-state replay), so a janitor can tell it apart.
EVAL_PREFIX = "eval-"
EXPECTED_PREFIX = EVAL_PREFIX + "expected-"


# Neon's tools by role, for the scorers and control agents (`harness.servers.roles`).
ROLES = ToolRoles(
    family="neon",
    stage=(PREPARE_TOOL,),
    apply=(COMPLETE_TOOL,),
    run_sql=RUN_SQL_TOOLS,
    branch_creators=(PREPARE_TOOL, "create_branch", PREPARE_TUNING_TOOL),
    destructive=DESTRUCTIVE_TOOLS,
    changing=CHANGING_TOOLS,
    read_only=READ_ONLY_TOOLS,
    stage_sql="migrationSql",
    tune=(PREPARE_TUNING_TOOL,),
    tune_apply=(COMPLETE_TUNING_TOOL,),
    database_argument="databaseName",
    default_database=DEFAULT_DATABASE,
    run_sql_batch=(RUN_SQL_TRANSACTION_TOOL,),
    branch_deleters=(DELETE_BRANCH_TOOL,),
    explain=(EXPLAIN_TOOL,),
    sandbox_argument="projectId",
)
# Every tool name Neon's servers have (the DBHub family drops them from a case's forbidden tools).
NEON_TOOLS = DESTRUCTIVE_TOOLS | CHANGING_TOOLS | READ_ONLY_TOOLS


def conventional_annotations(tool: str) -> dict[str, bool] | None:
    """Neon's `readOnlyHint` / `destructiveHint` for one of its tools, or None for a tool it has not."""
    return ROLES.conventional_annotations(tool)


def is_temporary_branch(name: str | None) -> bool:
    """Whether a branch name follows prepare_database_migration's temporary-branch convention."""
    return bool(name) and str(name).startswith(TEMPORARY_BRANCH_PREFIX)
