"""Running SQL on a branch database as the project role, and turning results into JSON text.

Every call opens its own short connection and closes it, so no session lingers on a database that
a branch operation may need to use as a template.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from localneon.explain_options import without_neon_explain_options

MAX_ROWS = 500
# The bounds a model's SQL cannot lift: the session's statement_timeout is its to change
# (`SET statement_timeout = 0`), so the twin cancels a call itself past LOCALNEON_STATEMENT_TIMEOUT;
# and a result is cut at LOCALNEON_MAX_RESULT_BYTES (counted as the JSON the model would read), so
# 20 rows of 10 MB are neither kept nor sent whole.
STATEMENT_TIMEOUT_S = float(os.environ.get("LOCALNEON_STATEMENT_TIMEOUT") or 60)
STATEMENT_TIMEOUT_MS = int(STATEMENT_TIMEOUT_S * 1000)
MAX_RESULT_BYTES = int(os.environ.get("LOCALNEON_MAX_RESULT_BYTES") or 1_000_000)


class StatementBoundExceeded(psycopg.errors.QueryCanceled):
    """The twin cancelled a call that ran past its own bound."""


def jsonable(value: Any) -> Any:
    """Values psycopg returns, made JSON-friendly (numbers stay numbers where exact)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2**53 else str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta | UUID):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


@dataclass
class StatementResult:
    """One statement's outcome: rows when it returned any, else its command status."""

    command: str
    rowcount: int
    rows: list[dict[str, Any]] | None
    truncated: bool = False
    cut_at_bytes: bool = False  # rows stopped at MAX_RESULT_BYTES, not at MAX_ROWS

    def as_json(self) -> Any:
        if self.rows is None:
            if self.rowcount < 0:
                return {"command": self.command}
            return {"command": self.command, "rowCount": self.rowcount}
        if self.cut_at_bytes:
            note = (
                f"result cut at {MAX_RESULT_BYTES} bytes: {len(self.rows)} of {self.rowcount} rows shown "
                "(a row too large for the limit shows as the text of its first bytes)"
            )
            return {"rows": self.rows, "note": note}
        if self.truncated:
            return {"rows": self.rows, "note": f"only the first {MAX_ROWS} rows are shown"}
        return self.rows


def _cut_row(row: dict[str, Any], room: int) -> dict[str, Any]:
    """A row whose JSON would not fit in `room` bytes: each text value cut to its share of it."""
    share = max(0, room // max(1, len(row)) - 16)
    return {k: (v[:share] if isinstance(v, str) else v) for k, v in row.items()}


def _collect(cur: psycopg.Cursor[dict[str, Any]]) -> list[StatementResult]:
    """Every statement's result, rows read one at a time until MAX_ROWS or MAX_RESULT_BYTES (summed
    over the statements) is reached, so a huge value is converted at most once and never sent whole."""
    results: list[StatementResult] = []
    room = MAX_RESULT_BYTES
    while True:
        status = cur.statusmessage or ""
        if cur.description is not None:
            rows: list[dict[str, Any]] = []
            truncated = cut = False
            while (raw := cur.fetchone()) is not None:
                if len(rows) == MAX_ROWS:
                    truncated = True
                    break
                row = jsonable(raw)
                size = len(json.dumps(row, ensure_ascii=False).encode("utf-8"))
                if size > room:
                    if not rows:
                        rows.append(_cut_row(row, room))
                    cut = True
                    room = 0
                    break
                room -= size
                rows.append(row)
            results.append(StatementResult(status, cur.rowcount, rows, truncated, cut))
        else:
            results.append(StatementResult(status, cur.rowcount, None))
        if not cur.nextset():
            break
    return results


@contextmanager
def bounded(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """Cancel what runs on `conn` once it passes STATEMENT_TIMEOUT_S, whatever the session's own
    statement_timeout says (the model may have set it to 0); the call then fails with the bound named."""
    fired = threading.Event()

    def cancel() -> None:
        fired.set()
        with contextlib.suppress(Exception):
            conn.cancel_safe(timeout=5)

    timer = threading.Timer(STATEMENT_TIMEOUT_S, cancel)
    timer.daemon = True
    timer.start()
    try:
        yield
    except psycopg.errors.QueryCanceled as exc:
        if fired.is_set():
            raise StatementBoundExceeded(
                f"the statement ran longer than localneon's {STATEMENT_TIMEOUT_S:g} s bound and was cancelled"
            ) from exc
        raise
    finally:
        timer.cancel()


def connect(conninfo: str, *, autocommit: bool) -> psycopg.Connection[dict[str, Any]]:
    return psycopg.connect(
        conninfo,
        autocommit=autocommit,
        row_factory=dict_row,
        options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
        connect_timeout=15,
    )


def run(conninfo: str, text: str) -> list[StatementResult]:
    """Run ``text`` (one or more statements, simple protocol) with autocommit, like a console."""
    with connect(conninfo, autocommit=True) as conn, conn.cursor() as cur, bounded(conn):
        # bytes: no parameter parsing, '%' stays literal
        cur.execute(without_neon_explain_options(text).encode(), prepare=False)
        return _collect(cur)


def run_read_only(conninfo: str, statements: list[str]) -> list[StatementResult]:
    """Run ``statements`` in one READ ONLY transaction (read-only grant): PostgreSQL refuses any write."""
    return run_transaction(conninfo, statements, read_only=True)


def run_transaction(conninfo: str, statements: list[str], *, read_only: bool = False) -> list[StatementResult]:
    """Run ``statements`` in one transaction: all of them take effect, or none do."""
    results: list[StatementResult] = []
    with connect(conninfo, autocommit=False) as conn, bounded(conn), conn.transaction(), conn.cursor() as cur:
        if read_only:
            cur.execute("SET TRANSACTION READ ONLY")
        for statement in statements:
            cur.execute(without_neon_explain_options(statement).encode(), prepare=False)
            results.extend(_collect(cur))
    return results


def run_rolled_back(conninfo: str, text: str) -> list[StatementResult]:
    """Run ``text`` inside a transaction that is always rolled back (EXPLAIN ANALYZE without effects)."""
    with connect(conninfo, autocommit=False) as conn, bounded(conn):
        try:
            with conn.cursor() as cur:
                # Prepared (the extended protocol): one statement only, as Neon's driver sends it, so a
                # text cannot end the transaction (`...; COMMIT; CREATE TABLE ...`) and write.
                cur.execute(without_neon_explain_options(text).encode(), prepare=True)
                return _collect(cur)
        finally:
            conn.rollback()


def query(conninfo: str, text: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """A parameterised read for the catalog-style helpers below."""
    with connect(conninfo, autocommit=True) as conn:
        return [jsonable(r) for r in conn.execute(text, params).fetchall()]


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, ensure_ascii=False)


def format_results(results: list[StatementResult]) -> str:
    """JSON text: a single statement's rows (or status), or a list with one entry per statement."""
    if len(results) == 1:
        return dumps(results[0].as_json())
    return dumps([r.as_json() for r in results])


def list_tables(conninfo: str) -> list[dict[str, Any]]:
    """User tables, views and materialized views, with their kind and estimated row counts."""
    return query(
        conninfo,
        """
        SELECT n.nspname AS schema, c.relname AS table_name,
               CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view'
                    WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' END AS table_type,
               GREATEST(c.reltuples, 0)::bigint AS estimated_rows
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'
        ORDER BY 1, 2
        """,
    )


def describe_table(conninfo: str, table: str) -> dict[str, Any] | None:
    """Columns, constraints and indexes of ``table`` (``name`` or ``schema.name``); None if absent."""
    with connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass(%s)::oid AS oid", (table,)).fetchone()
        if row is None or row["oid"] is None:
            return None
        oid = row["oid"]
        head = conn.execute(
            "SELECT n.nspname AS schema, c.relname AS name FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s",
            (oid,),
        ).fetchone()
        columns = conn.execute(
            """
            SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
                   NOT a.attnotnull AS nullable, pg_get_expr(d.adbin, d.adrelid) AS default
            FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
            """,
            (oid,),
        ).fetchall()
        constraints = conn.execute(
            "SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint "
            "WHERE conrelid = %s ORDER BY conname",
            (oid,),
        ).fetchall()
        indexes = conn.execute(
            "SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS definition "
            "FROM pg_index WHERE indrelid = %s ORDER BY 1",
            (oid,),
        ).fetchall()
    return {
        "schema": head["schema"] if head else None,
        "table": head["name"] if head else table,
        "columns": jsonable(columns),
        "constraints": jsonable(constraints),
        "indexes": jsonable(indexes),
    }


def explain(conninfo: str, statement: str, *, analyze: bool) -> Any:
    """The JSON plan of ``statement``; with ``analyze`` it runs inside a rolled-back transaction."""
    options = "ANALYZE, BUFFERS, " if analyze else ""
    results = run_rolled_back(conninfo, f"EXPLAIN ({options}VERBOSE, FORMAT JSON) {statement}")
    rows = results[-1].rows or []
    if not rows:
        return []
    value = next(iter(rows[0].values()))
    return json.loads(value) if isinstance(value, str) else value


def relations_in_plan(plan: Any) -> list[str]:
    """Schema-qualified relation names a JSON plan touches, in first-seen order."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            name = node.get("Relation Name")
            if name:
                qualified = f"{node.get('Schema', 'public')}.{name}"
                if qualified not in found:
                    found.append(qualified)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(plan)
    return found


def slow_queries(admin_catalog_conninfo: str, database_oid: int, min_ms: float, limit: int) -> list[dict[str, Any]]:
    """pg_stat_statements rows for one database, slowest mean time first."""
    return query(
        admin_catalog_conninfo,
        """
        SELECT query, calls, round(mean_exec_time::numeric, 3) AS mean_exec_time_ms,
               round(total_exec_time::numeric, 3) AS total_exec_time_ms,
               round(max_exec_time::numeric, 3) AS max_exec_time_ms, rows
        FROM pg_stat_statements
        WHERE dbid = %s AND mean_exec_time >= %s
        ORDER BY mean_exec_time DESC LIMIT %s
        """,
        (database_oid, min_ms, limit),
    )


def database_oid(admin_conninfo: str, pg_name: str) -> int:
    rows = query(admin_conninfo, "SELECT oid::bigint AS oid FROM pg_database WHERE datname = %s", (pg_name,))
    if not rows:
        raise LookupError(pg_name)
    return int(rows[0]["oid"])
