"""SQL tools: run statements, list tables, describe a table, explain a statement, slow queries."""

from __future__ import annotations

from typing import Any

from localneon.engine import sql
from localneon.engine.branching import Neon
from localneon.engine.catalog import CATALOG_DB
from localneon.engine.errors import InvalidRequest, LocalNeonError, NotFound
from localneon.mcp.tools import Param, ToolSpec, boolean, integer, string, string_list
from localneon.mcp.tools.common import (
    BRANCH_ID,
    DATABASE_NAME,
    PROJECT_ID,
    pg_errors,
    require_text,
    target,
    to_json,
    where,
)


def run_sql(neon: Neon, args: dict[str, Any]) -> str:
    statement = require_text(args, "sql")
    t = target(neon, args)
    with pg_errors("run_sql", t):
        results = sql.run(neon.role_conninfo(t), statement)
    return sql.format_results(results)


def _statements(args: dict[str, Any]) -> list[str]:
    statements = args.get("sqlStatements") or []
    if not statements or not all(isinstance(s, str) and s.strip() for s in statements):
        raise InvalidRequest("sqlStatements must be a non-empty list of SQL strings")
    return list(statements)


def run_sql_transaction(neon: Neon, args: dict[str, Any]) -> str:
    statements = _statements(args)
    t = target(neon, args)
    with pg_errors("run_sql_transaction (rolled back, nothing was applied)", t):
        results = sql.run_transaction(neon.role_conninfo(t), statements)
    return sql.dumps([r.as_json() for r in results])


def run_sql_read_only(neon: Neon, args: dict[str, Any]) -> str:
    """``run_sql`` under a read-only grant: one READ ONLY transaction, as Neon runs it."""
    statement = require_text(args, "sql")
    t = target(neon, args)
    with pg_errors("run_sql (read-only mode: a read-only transaction)", t):
        results = sql.run_read_only(neon.readonly_conninfo(t), [statement])
    return sql.format_results(results)


def run_sql_transaction_read_only(neon: Neon, args: dict[str, Any]) -> str:
    statements = _statements(args)
    t = target(neon, args)
    with pg_errors("run_sql_transaction (read-only mode: a read-only transaction, nothing was applied)", t):
        results = sql.run_read_only(neon.readonly_conninfo(t), statements)
    return sql.dumps([r.as_json() for r in results])


def get_database_tables(neon: Neon, args: dict[str, Any]) -> str:
    t = target(neon, args)
    with pg_errors("get_database_tables", t):
        tables = sql.list_tables(neon.role_conninfo(t))
    return to_json({"branch_id": t.branch.id, "database": t.database.name, "tables": tables})


def describe_table_schema(neon: Neon, args: dict[str, Any]) -> str:
    table = require_text(args, "tableName")
    t = target(neon, args)
    with pg_errors("describe_table_schema", t):
        info = sql.describe_table(neon.role_conninfo(t), table)
    if info is None:
        raise NotFound(f"describe_table_schema on {where(t)}: table {table!r} does not exist")
    return to_json(info)


def explain_sql_statement(neon: Neon, args: dict[str, Any]) -> str:
    statement = require_text(args, "sql")
    analyze = args.get("analyze", True) is not False
    t = target(neon, args)
    with pg_errors("explain_sql_statement", t):
        plan = sql.explain(neon.role_conninfo(t), statement, analyze=analyze)
    note = "EXPLAIN ANALYZE ran the statement inside a transaction that was rolled back." if analyze else ""
    return to_json({"branch_id": t.branch.id, "database": t.database.name, "plan": plan, "note": note})


def list_slow_queries(neon: Neon, args: dict[str, Any]) -> str:
    t = target(neon, args)
    compute = args.get("computeId")
    endpoints = [e.id for e in neon.catalog.endpoints(t.project.id, t.branch.id)]
    if compute and compute not in endpoints:
        raise NotFound(f"compute {compute!r} does not belong to branch {t.branch.id} (its computes: {endpoints})")
    limit = int(args.get("limit") or 10)
    min_ms = float(args.get("minExecutionTime", 1000))
    catalog_admin = neon.cluster.conninfo(CATALOG_DB)
    try:
        oid = sql.database_oid(neon.cluster.admin_conninfo, t.database.pg_name)
        rows = sql.slow_queries(catalog_admin, oid, min_ms, limit)
    except LookupError as exc:
        raise LocalNeonError(f"list_slow_queries: the database of {where(t)} is missing") from exc
    except Exception as exc:
        raise LocalNeonError(f"list_slow_queries on {where(t)} failed (is pg_stat_statements loaded?): {exc}") from exc
    return to_json(
        {
            "branch_id": t.branch.id,
            "database": t.database.name,
            "min_execution_time_ms": min_ms,
            "slow_queries": rows,
        }
    )


SQL = Param("sql", string(), required=True)
TOOLS = [
    ToolSpec(
        "run_sql",
        (SQL, PROJECT_ID, BRANCH_ID, DATABASE_NAME),
        run_sql,
        destructive=True,
        read_only_handler=run_sql_read_only,
        title="Run SQL",
        category="querying",
        read_only_safe=True,
    ),
    ToolSpec(
        "run_sql_transaction",
        (Param("sqlStatements", string_list(minItems=1), required=True), PROJECT_ID, BRANCH_ID, DATABASE_NAME),
        run_sql_transaction,
        destructive=True,
        read_only_handler=run_sql_transaction_read_only,
        title="Run SQL Transaction",
        category="querying",
        read_only_safe=True,
    ),
    ToolSpec(
        "describe_table_schema",
        (Param("tableName", string(), required=True), PROJECT_ID, BRANCH_ID, DATABASE_NAME),
        describe_table_schema,
        read_only=True,
        idempotent=True,
        title="Describe Table Schema",
        category="schema",
        read_only_safe=True,
    ),
    ToolSpec(
        "get_database_tables",
        (PROJECT_ID, BRANCH_ID, DATABASE_NAME),
        get_database_tables,
        read_only=True,
        idempotent=True,
        title="Get Database Tables",
        category="schema",
        read_only_safe=True,
    ),
    ToolSpec(
        "explain_sql_statement",
        (SQL, PROJECT_ID, BRANCH_ID, DATABASE_NAME, Param("analyze", boolean(default=True))),
        explain_sql_statement,
        read_only=True,
        idempotent=True,
        title="Explain SQL Statement",
        category="querying",
        read_only_safe=True,
    ),
    ToolSpec(
        "list_slow_queries",
        (
            PROJECT_ID,
            BRANCH_ID,
            DATABASE_NAME,
            Param("computeId", string()),
            Param("limit", integer(minimum=1, maximum=1000, default=10)),
            Param("minExecutionTime", {"type": "number", "minimum": 0, "default": 1000}),
        ),
        list_slow_queries,
        read_only=True,
        title="List Slow Queries",
        category="querying",
        read_only_safe=True,
    ),
]
