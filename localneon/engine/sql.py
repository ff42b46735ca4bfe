"""Running SQL on a branch database as the project role, and turning results into JSON text.

Every call opens its own short connection and closes it, so no session lingers on a database that
a branch operation may need to use as a template. Every SQL text runs through ``bounds``: rows are
read one at a time and kept up to ``MAX_ROWS`` and ``bounds.MAX_RESULT_BYTES`` (counted as the JSON
text the model reads; the rest is read and dropped, so later statements of the text still run),
and the call is ended at ``bounds.STATEMENT_TIMEOUT_S`` whatever the session set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import psycopg
from psycopg import ClientCursor, pq
from psycopg.adapt import Transformer

from localneon.engine import bounds, guards
from localneon.engine.explain_options import without_neon_explain_options

MAX_ROWS = 500


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
    cut_at: int | None = None  # the byte limit the rows were cut at

    def as_json(self) -> Any:
        if self.rows is None:
            if self.rowcount < 0:
                return {"command": self.command}
            return {"command": self.command, "rowCount": self.rowcount}
        if self.cut_at is not None:
            note = f"result cut at {self.cut_at} bytes: {len(self.rows)} of {self.rowcount} rows shown"
            return {"rows": self.rows, "note": note}
        if self.truncated:
            return {"rows": self.rows, "note": f"only the first {MAX_ROWS} rows are shown"}
        return self.rows


def _size(value: Any) -> int:
    """Bytes ``value`` takes in the JSON text the model reads, nested up to three levels deep there."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return len(text.encode()) + 6 * (text.count("\n") + 1) + 2


def _shorten(value: Any, room: int) -> Any:
    """A value whose JSON would not fit in ``room`` bytes, as the first characters of its text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text[:room]
    while text and (size := _size(text)) > room:
        text = text[: len(text) * room // size - 1]
    return text


def _cut_row(row: dict[str, Any], room: int) -> dict[str, Any]:
    """The first row of a result, too large for what is left: each large value cut to its share."""
    share = max(0, (room - _size({k: None for k in row})) // max(1, len(row)))
    return {k: v if _size(v) <= share else _shorten(v, share) for k, v in row.items()}


class _Rows:
    """The rows of one statement as they arrive: kept while they fit, counted after."""

    def __init__(self, budget: list[int], names: list[str]) -> None:
        self.budget = budget  # one mutable int shared by every statement of the call
        self.names = names
        self.kept: list[dict[str, Any]] = []
        self.seen = 0
        self.truncated = False
        self.cut = False

    def make(self, values: Any) -> dict[str, Any]:
        return dict(zip(self.names, values, strict=True))

    def wants_more(self) -> bool:
        return not self.truncated and not self.cut

    def add(self, row: dict[str, Any]) -> None:
        if len(self.kept) >= MAX_ROWS:
            self.truncated = True
            return
        row = jsonable(row)
        size = _size(row)
        if size > self.budget[0]:
            if not self.kept and self.budget[0] > 0:
                self.kept.append(_cut_row(row, self.budget[0]))
            self.cut, self.budget[0] = True, 0
            return
        self.budget[0] -= size
        self.kept.append(row)


def _execute(
    conn: psycopg.Connection[Any], dog: bounds.Watchdog, text: str, budget: list[int], *, one: bool = False
) -> list[StatementResult]:
    """Run ``text`` (``one``: as a single statement over the extended protocol) and shape its results."""
    pgconn = conn.pgconn
    bounds.send(pgconn, dog, without_neon_explain_options(text).encode(), [] if one else None)
    out: list[StatementResult] = []
    error: psycopg.Error | None = None
    rows: _Rows | None = None
    tx = Transformer(conn)
    for res in bounds.results(pgconn, dog):
        status = res.status
        if status == pq.ExecStatus.SINGLE_TUPLE:
            first = rows is None
            if rows is None:
                rows = _Rows(budget, [(res.fname(i) or b"").decode(conn.info.encoding) for i in range(res.nfields)])
            rows.seen += 1
            if rows.wants_more():
                tx.set_pgresult(res, set_loaders=first)
                rows.add(tx.load_row(0, rows.make))
        elif status == pq.ExecStatus.FATAL_ERROR:
            error = error or psycopg.errors.error_from_result(res, encoding=conn.info.encoding)
        elif bounds.is_copy(res):
            error = error or psycopg.NotSupportedError("COPY is not available here: use INSERT or SELECT")
        elif status in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK, pq.ExecStatus.EMPTY_QUERY):
            command = (res.command_status or b"").decode(conn.info.encoding)
            count = res.command_tuples
            if status == pq.ExecStatus.TUPLES_OK:
                rows = rows or _Rows(budget, [])
                cut_at = bounds.MAX_RESULT_BYTES if rows.cut else None
                out.append(StatementResult(command, rows.seen, rows.kept, rows.truncated, cut_at))
            else:
                out.append(StatementResult(command, -1 if count is None else count, None))
            rows = None
    if error is not None:
        raise error
    return out


@contextmanager
def session(conninfo: str) -> Iterator[tuple[psycopg.Connection[Any], bounds.Watchdog]]:
    """A connection as ``conninfo``'s role with the call's watchdog; closed on the way out, and a
    failure after the watchdog fired reported as the bound (the backend was cancelled or ended)."""
    with connect(conninfo) as conn:
        dog = bounds.Watchdog(conn, conninfo)
        try:
            yield conn, dog
        except psycopg.Error as exc:
            if dog.fired and not isinstance(exc, bounds.Bound):
                raise dog.error() from exc
            raise
        finally:
            dog.close()


def connect(conninfo: str) -> psycopg.Connection[Any]:
    return psycopg.connect(
        conninfo,
        autocommit=True,
        options=f"-c statement_timeout={bounds.statement_timeout_ms()}",
        connect_timeout=15,
    )


def run(conninfo: str, text: str) -> list[StatementResult]:
    """Run ``text`` (one or more statements, simple protocol) with autocommit, like a console."""
    with session(conninfo) as (conn, dog):
        return _execute(conn, dog, text, [bounds.MAX_RESULT_BYTES])


def run_read_only(conninfo: str, statements: list[str]) -> list[StatementResult]:
    """Run ``statements`` in one READ ONLY transaction, each as one statement over the extended
    protocol, as Neon's server sends them (a text of several statements is an error there too)."""
    return run_transaction(conninfo, statements, read_only=True)


def run_transaction(conninfo: str, statements: list[str], *, read_only: bool = False) -> list[StatementResult]:
    """Run ``statements`` in one transaction: all of them take effect, or none do (a failure closes
    the connection, and PostgreSQL rolls the transaction back).

    ``read_only``: each statement alone (the extended protocol), in a READ ONLY transaction the
    statements cannot leave (``guards.keep_read_only``)."""
    budget = [bounds.MAX_RESULT_BYTES]
    with session(conninfo) as (conn, dog):

        def internal(text: str) -> list[str]:
            return [r.command for r in _execute(conn, dog, text, [bounds.MAX_RESULT_BYTES])]

        if read_only:
            internal(guards.READ_ONLY_BEGIN)
        else:
            _execute(conn, dog, "BEGIN", budget)
        results: list[StatementResult] = []
        for statement in statements:
            done = _execute(conn, dog, statement, budget, one=read_only)
            results += done
            if read_only:
                guards.keep_read_only(conn.pgconn, [r.command for r in done], internal, guards.READ_ONLY_BEGIN)
        _execute(conn, dog, "COMMIT", budget)
    return results


def run_rolled_back(conninfo: str, text: str) -> list[StatementResult]:
    """Run ``text`` inside a transaction that is always rolled back (EXPLAIN ANALYZE without effects).

    One statement over the extended protocol, as Neon's driver sends it, so the text cannot end
    the transaction (``...; COMMIT; CREATE TABLE ...``) and write."""
    budget = [bounds.MAX_RESULT_BYTES]
    with session(conninfo) as (conn, dog):
        _execute(conn, dog, "BEGIN", budget)
        try:
            return _execute(conn, dog, text, budget, one=True)
        finally:
            if conn.pgconn.transaction_status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
                _execute(conn, dog, "ROLLBACK", budget)


def _rows(conn: psycopg.Connection[Any], dog: bounds.Watchdog, text: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """A read of the twin's own, bound like the model's SQL: the model may have put functions of
    its own before ``pg_catalog`` on the search path, so even these queries can run its code."""
    literal = ClientCursor(conn).mogrify(text, params) if params else text.replace("%%", "%")
    [result] = _execute(conn, dog, literal, [bounds.MAX_RESULT_BYTES * 10], one=True)
    return result.rows or []


def query(conninfo: str, text: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """A parameterised read for the catalog-style helpers below."""
    with session(conninfo) as (conn, dog):
        return _rows(conn, dog, text, params)


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
    with session(conninfo) as (conn, dog):
        found = _rows(conn, dog, "SELECT to_regclass(%s)::oid AS oid", (table,))
        if not found or found[0]["oid"] is None:
            return None
        oid = (found[0]["oid"],)
        head = _rows(
            conn,
            dog,
            "SELECT n.nspname AS schema, c.relname AS name FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s",
            oid,
        )
        columns = _rows(
            conn,
            dog,
            """
            SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
                   NOT a.attnotnull AS nullable, pg_get_expr(d.adbin, d.adrelid) AS default
            FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
            """,
            oid,
        )
        constraints = _rows(
            conn,
            dog,
            "SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint "
            "WHERE conrelid = %s ORDER BY conname",
            oid,
        )
        indexes = _rows(
            conn,
            dog,
            "SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS definition "
            "FROM pg_index WHERE indrelid = %s ORDER BY 1",
            oid,
        )
    return {
        "schema": head[0]["schema"] if head else None,
        "table": head[0]["name"] if head else table,
        "columns": columns,
        "constraints": constraints,
        "indexes": indexes,
    }


def explain(conninfo: str, statement: str, *, analyze: bool) -> Any:
    """The JSON plan of ``statement``; with ``analyze`` it runs inside a rolled-back transaction."""
    options = "ANALYZE, BUFFERS, " if analyze else ""
    results = run_rolled_back(conninfo, f"EXPLAIN ({options}VERBOSE, FORMAT JSON) {statement}")
    rows = results[-1].rows or []
    if not rows:
        return []
    value = next(iter(rows[0].values()))
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:  # a plan cut at the byte limit: its text as far as it goes
        return value


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
        WHERE dbid = %s AND mean_exec_time >= %s AND query <> %s
        ORDER BY mean_exec_time DESC LIMIT %s
        """,
        (database_oid, min_ms, bounds.SIZE_PROBE, limit),
    )


def database_oid(admin_conninfo: str, pg_name: str) -> int:
    rows = query(admin_conninfo, "SELECT oid::bigint AS oid FROM pg_database WHERE datname = %s", (pg_name,))
    if not rows:
        raise LookupError(pg_name)
    return int(rows[0]["oid"])
