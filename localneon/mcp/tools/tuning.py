"""Query tuning: study a plan on a temporary branch, try indexes there, optionally apply them.

The tuning session (its SQL, database and temporary branch) is a catalog row, so the complete
step can run in another process than the prepare step.
"""

from __future__ import annotations

from typing import Any

from localneon.engine import ids, sql
from localneon.engine.branching import Neon
from localneon.engine.errors import InvalidRequest, LocalNeonError, NotFound
from localneon.mcp.tools import Param, ToolSpec, boolean, string, string_list
from localneon.mcp.tools.common import BRANCH_ID, PROJECT_ID, REQUIRED_DATABASE_NAME, check_role, pg_errors, to_json

TEMP_PREFIX = "mcp-query-tuning-"


def prepare_query_tuning(neon: Neon, args: dict[str, Any]) -> str:
    statement = args.get("sql") or ""
    if not statement.strip():
        raise InvalidRequest("sql must be a non-empty string")
    project_id = args["projectId"]
    parent = neon.branch(project_id, None)
    base = neon.target(project_id, parent.id, args["databaseName"])
    check_role(neon, base, args.get("roleName"))
    name = f"{TEMP_PREFIX}{ids.utc_stamp()}-{ids.random_alnum(6)}"
    temp = neon.create_branch(project_id, parent_id=parent.id, name=name).branch
    t = neon.target(project_id, temp.id, base.database.name)
    try:
        with pg_errors("prepare_query_tuning (the temporary branch was deleted)", t):
            conninfo = neon.role_conninfo(t)
            plan = sql.explain(conninfo, statement, analyze=True)
            schemas = [sql.describe_table(conninfo, rel) for rel in sql.relations_in_plan(plan)]
    except LocalNeonError:
        neon.delete_branch(project_id, temp.id)
        raise
    tuning_id = ids.migration_id()
    neon.catalog.insert_tuning(tuning_id, project_id, parent.id, temp.id, t.database.name, statement)
    return "\n".join(
        [
            f"tuningId: {tuning_id}",
            f"temporaryBranchId: {temp.id} (name {temp.name}, a copy of {parent.name} {parent.id})",
            f"databaseName: {t.database.name}",
            "",
            "Execution plan (EXPLAIN ANALYZE on the temporary branch, rolled back):",
            to_json(plan),
            "",
            "Schemas of the tables in the plan:",
            to_json([s for s in schemas if s]),
            "",
            "Next: look for sequential scans on large tables, costly sorts or joins, and propose statements "
            "(usually CREATE INDEX). Try them on the temporary branch with run_sql (branchId above) and "
            "compare plans with explain_sql_statement there; then call complete_query_tuning with "
            "suggestedSqlStatements, applyChanges true only after the user approves applying them to the "
            "main branch (false cleans up).",
        ]
    )


def complete_query_tuning(neon: Neon, args: dict[str, Any]) -> str:
    project_id = args["projectId"]
    tuning = neon.catalog.get_tuning(args["tuningId"])
    if tuning is None or tuning["project_id"] != project_id:
        raise NotFound(f"unknown tuningId {args['tuningId']!r} for project {project_id}; run prepare_query_tuning")
    temp_id = args["temporaryBranchId"]
    if temp_id != tuning["temp_branch_id"]:
        raise InvalidRequest(f"temporaryBranchId {temp_id} does not belong to tuning {args['tuningId']}")
    statements = [s for s in args.get("suggestedSqlStatements") or [] if isinstance(s, str) and s.strip()]
    database = args["databaseName"]
    lines: list[str] = []
    temp = neon.catalog.get_branch(project_id, temp_id)
    if temp is None:
        raise NotFound(f"temporary branch {temp_id} no longer exists; run prepare_query_tuning again")
    # As Neon's server: the statements are applied only to the target, once, and only with applyChanges;
    # trying them on the temporary branch is the model's job (run_sql there, explain_sql_statement).
    if args.get("applyChanges") is True and statements:
        main = neon.target(project_id, args.get("branchId") or tuning["branch_id"], database)
        check_role(neon, main, args.get("roleName"))
        with pg_errors("complete_query_tuning on the target branch", main):
            sql.run_transaction(neon.role_conninfo(main), statements)
        lines.append(f"Applied {len(statements)} statement(s) to branch {main.branch.name} ({main.branch.id}).")
    else:
        lines.append("No changes were applied (either none suggested or changes were discarded).")
    if args.get("shouldDeleteTemporaryBranch", True) is not False:
        try:
            neon.delete_branch(project_id, temp.id)
            lines.append(f"Deleted temporary branch {temp.id}.")
        except Exception as exc:
            lines.append(f"Warning: could not delete temporary branch {temp.id}: {exc}")
    else:
        lines.append(f"Kept temporary branch {temp.id}.")
    return "\n".join(lines)


TOOLS = [
    ToolSpec(
        "prepare_query_tuning",
        (
            Param("sql", string(), required=True),
            REQUIRED_DATABASE_NAME,
            PROJECT_ID,
            Param("roleName", string()),
        ),
        prepare_query_tuning,
        title="Prepare Query Tuning",
        category="querying",
        read_only_safe=False,
    ),
    ToolSpec(
        "complete_query_tuning",
        (
            Param("suggestedSqlStatements", string_list(), required=True),
            Param("applyChanges", boolean(default=False)),
            Param("tuningId", string(), required=True),
            REQUIRED_DATABASE_NAME,
            PROJECT_ID,
            Param("roleName", string()),
            Param("shouldDeleteTemporaryBranch", boolean(default=True)),
            Param("temporaryBranchId", string(), required=True),
            BRANCH_ID,
        ),
        complete_query_tuning,
        destructive=True,
        title="Complete Query Tuning",
        category="querying",
        read_only_safe=False,
    ),
]
