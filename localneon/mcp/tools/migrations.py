"""The two-step migration workflow: try the change on a temporary branch, then apply or cancel.

Stateless by design: ``prepare`` returns every value ``complete`` needs, and ``complete`` checks
them against the catalog (the temporary branch must exist, be a migration branch, and be a child
of the given parent) instead of trusting a pending migration kept in memory.
"""

from __future__ import annotations

from typing import Any

from localneon.engine import ids, sql
from localneon.engine.branching import Neon
from localneon.engine.errors import InvalidRequest, LocalNeonError, NotFound
from localneon.mcp.tools import Param, ToolSpec, boolean, string
from localneon.mcp.tools.common import DATABASE_NAME, PROJECT_ID, pg_errors, require_text

TEMP_PREFIX = "mcp-migration-"


def prepare_database_migration(neon: Neon, args: dict[str, Any]) -> str:
    migration_sql = require_text(args, "migrationSql")
    project_id = args["projectId"]
    parent = neon.branch(project_id, None)
    database = args.get("databaseName") or None
    neon.database(parent, database)  # fail before branching if the database does not exist
    name = f"{TEMP_PREFIX}{ids.utc_stamp()}-{ids.random_alnum(6)}"
    created = neon.create_branch(project_id, parent_id=parent.id, name=name)
    temp = created.branch
    t = neon.target(project_id, temp.id, database)
    try:
        with pg_errors("prepare_database_migration (the temporary branch was deleted)", t):
            results = sql.run_transaction(neon.role_conninfo(t), [migration_sql])
    except LocalNeonError:
        neon.delete_branch(project_id, temp.id)
        raise
    migration_id = ids.migration_id()
    return "\n".join(
        [
            "The migration was applied on a temporary branch only. The default branch is unchanged.",
            "",
            "Values complete_database_migration needs (pass them back exactly):",
            f"- migrationId: {migration_id}",
            f"- projectId: {project_id}",
            f"- databaseName: {t.database.name}",
            f"- parentBranchId: {parent.id}",
            f"- temporaryBranchId: {temp.id}",
            f"- temporaryBranchName: {temp.name}",
            "- migrationSql:",
            migration_sql,
            "",
            "Execution result on the temporary branch:",
            sql.format_results(results),
            "",
            "Next steps:",
            f"1. Verify the change on the temporary branch with run_sql (branchId {temp.id}), "
            "e.g. describe_table_schema or a SELECT.",
            "2. Report to the user what changed and what you checked, then ask whether to apply it "
            f"to the default branch ({parent.name}).",
            "3. Only after the user explicitly approves, call complete_database_migration with "
            "applyChanges true. If the user declines, call it with applyChanges false to clean up.",
        ]
    )


def complete_database_migration(neon: Neon, args: dict[str, Any]) -> str:
    project_id = args["projectId"]
    migration_sql = require_text(args, "migrationSql")
    require_text(args, "migrationId")
    temp_id = args["temporaryBranchId"]
    parent_id = args["parentBranchId"]
    apply = args.get("applyChanges", True) is not False
    neon.project(project_id)
    temp = neon.catalog.get_branch(project_id, temp_id)
    if temp is None:
        raise NotFound(
            f"unknown temporary branch {temp_id!r} in project {project_id}: it does not exist "
            "(already completed or cancelled?) — run prepare_database_migration again"
        )
    if not temp.name.startswith(TEMP_PREFIX):
        raise InvalidRequest(
            f"branch {temp_id} ({temp.name}) is not a migration branch made by prepare_database_migration; "
            "refusing to use or delete it"
        )
    if temp.parent_id != parent_id:
        raise InvalidRequest(
            f"parent mismatch: temporary branch {temp_id} was created from {temp.parent_id}, "
            f"not from {parent_id}; pass the parentBranchId that prepare_database_migration returned"
        )
    parent = neon.branch(project_id, parent_id)
    lines: list[str] = []
    failure: str | None = None
    if apply:
        t = neon.target(project_id, parent.id, args.get("databaseName") or None)
        try:
            with pg_errors("complete_database_migration (nothing was applied)", t):
                results = sql.run_transaction(neon.role_conninfo(t), [migration_sql])
            lines.append(f"Applied the migration to branch {parent.name} ({parent.id}) in one transaction.")
            lines.append("Result: " + sql.format_results(results))
        except LocalNeonError as exc:
            failure = exc.message
    else:
        lines.append(f"Cancelled: nothing was applied to branch {parent.name} ({parent.id}).")
    try:
        neon.delete_branch(project_id, temp.id)
        lines.append(f"Deleted temporary branch {temp.name} ({temp.id}).")
    except Exception as exc:
        lines.append(f"Warning: could not delete temporary branch {temp.id}: {exc}")
    if failure is not None:
        raise LocalNeonError(failure + "\n" + "\n".join(lines))
    return "\n".join(lines)


TOOLS = [
    ToolSpec(
        "prepare_database_migration",
        (Param("migrationSql", string(), required=True), PROJECT_ID, DATABASE_NAME),
        prepare_database_migration,
        title="Prepare Database Migration",
        category="querying",
        read_only_safe=False,
    ),
    ToolSpec(
        "complete_database_migration",
        (
            Param("migrationId", string(), required=True),
            Param("migrationSql", string(), required=True),
            Param("databaseName", string(), required=True),
            PROJECT_ID,
            Param("temporaryBranchId", string(), required=True),
            Param("parentBranchId", string(), required=True),
            Param("applyChanges", boolean(default=True)),
        ),
        complete_database_migration,
        destructive=True,
        title="Complete Database Migration",
        category="querying",
        read_only_safe=False,
    ),
]
