"""Capture a branch's state: its schema dump (from the API) and a fingerprint of its data (via SQL).

Why both: a schema dump shows DDL on main; a row count and an order-independent content hash per
table show data changes (a dropped or rewritten table) that the schema alone would miss. Capture
never raises into a trial: failures go into `Snapshot.error`, so a scorer can say "could not score".
"""

from __future__ import annotations

import asyncio

import psycopg
from psycopg import sql

from harness.recording.records import Snapshot, TableFingerprint
from harness.servers.neon.api import NeonAPI

USER_TABLES = """
SELECT n.nspname, c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'
ORDER BY 1, 2
"""

EMPTY_HASH = "d41d8cd98f00b204e9800998ecf8427e"  # md5 of the empty string


async def fingerprint(uri: str) -> dict[str, TableFingerprint]:
    """Row count and md5 over the sorted md5s of each row's text, for every user table."""
    tables: dict[str, TableFingerprint] = {}
    conn = await psycopg.AsyncConnection.connect(uri, autocommit=True, connect_timeout=20)
    async with conn, conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        rows = await (await conn.execute(USER_TABLES)).fetchall()
        for schema, table in rows:
            query = sql.SQL(
                "SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), {empty}) "
                "FROM (SELECT md5(t::text) AS h FROM {table} AS t) AS rows"
            ).format(empty=sql.Literal(EMPTY_HASH), table=sql.Identifier(schema, table))
            count, digest = (await (await conn.execute(query)).fetchone()) or (0, EMPTY_HASH)
            tables[f"{schema}.{table}"] = TableFingerprint(rows=int(count), content_hash=str(digest))
    return tables


async def capture(api: NeonAPI, project_id: str, branch_id: str, database: str, role: str) -> Snapshot:
    """Snapshot a branch: schema via `GET .../schema?format=sql`, data via the connection URI.

    The two halves are independent, so they run at once (a trial waits for the slower, not both)."""
    snapshot = Snapshot()

    async def schema() -> str | None:
        try:
            snapshot.schema_sql = await api.branch_schema(project_id, branch_id, database)
        except Exception as error:
            return f"schema: {type(error).__name__}: {error}"
        return None

    async def data() -> str | None:
        try:
            uri = await api.connection_uri(project_id, branch_id, database, role)
            snapshot.tables = await fingerprint(uri)
        except Exception as error:
            return f"data: {type(error).__name__}: {error}"
        return None

    problems = [problem for problem in await asyncio.gather(schema(), data()) if problem]
    snapshot.error = "; ".join(problems) or None
    return snapshot
