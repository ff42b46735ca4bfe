"""Capture a branch's state: its schema dump (from the API) and a fingerprint of its data (via SQL).

Why both: a schema dump shows DDL on main; a row count and an order-independent content hash per
table show data changes (a dropped or rewritten table) that the schema alone would miss. Capture
never raises into a trial: failures go into `Snapshot.error`, so a scorer can say "could not score".

The model under test ran SQL as the same role the capture connects as, so nothing it could set may
reach the capture: every setting it could leave on its role or database (timeouts, read-only
defaults, output formats, the search path that would find a planted `public.md5`) is pinned at
connection start, where it overrides role and database defaults; the trial's own sessions are
ended first, so no lock of theirs stands in the way; and the whole capture is bounded in time. What
still makes a capture fail after that (a connection limit, a changed password, a forced row
security policy) is the model's doing, and `Snapshot.fault` says so: see `faults.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from harness.recording.records import DUMP_COMPLETE_MARKER, Snapshot, TableFingerprint
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.faults import classify

DEFAULT_CAPTURE_TIMEOUT = 60.0
USER_TABLES = """
SELECT n.nspname, c.relname
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
ORDER BY 1, 2
"""
# Where this role reads sessions: every session's row from `pg_stat_get_activity(NULL)`, or on the
# local twin, which closes that function to project roles (it names every project's role), the
# filtered view of its own sessions (`_activity_source`). Both have datid, pid, usesysid and state.
ACTIVITY = "pg_catalog.pg_stat_get_activity(NULL)"
TWIN_ACTIVITY = "pg_localneon.pg_stat_activity"
# The current database's oid without reading pg_database (the local twin closes that catalog).
_OWN_DATABASE = "(SELECT a.datid FROM {activity} AS a WHERE a.pid = pg_catalog.pg_backend_pid())"
_OWN_ROLE = "pg_catalog.quote_ident(current_user)::pg_catalog.regrole::pg_catalog.oid"
_USER_SCHEMA = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"
# What a later connection to main would inherit that the schema dump leaves out: the role's and the
# database's settings, the grants on user objects and the default ones (`pg_dump --no-privileges` drops
# them), objects the project's role does not own (`--no-owner`), where each sequence stands (the
# next insert's key), the large objects (rows outside any table), and what the database itself grants
# (`REVOKE TEMP ON DATABASE ... FROM PUBLIC`), read as privileges held, not from pg_database.
ENVIRONMENT = f"""
SELECT 'role_settings', s FROM {{settings}} d, pg_catalog.unnest(d.setconfig) AS s
 WHERE d.setrole = {_OWN_ROLE} AND d.setdatabase IN (0, {_OWN_DATABASE})
UNION ALL
SELECT 'database_settings', s FROM {{settings}} d, pg_catalog.unnest(d.setconfig) AS s
 WHERE d.setrole = 0 AND d.setdatabase = {_OWN_DATABASE}
UNION ALL
SELECT 'grants', pg_catalog.format('%I.%I %s', n.nspname, c.relname, c.relacl)
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relacl IS NOT NULL AND {_USER_SCHEMA}
UNION ALL
SELECT 'grants', pg_catalog.format('schema %I %s', n.nspname, n.nspacl)
  FROM pg_catalog.pg_namespace n WHERE n.nspacl IS NOT NULL AND {_USER_SCHEMA}
UNION ALL
SELECT 'grants', pg_catalog.format('function %s %s', p.oid::pg_catalog.regprocedure, p.proacl)
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
 WHERE p.proacl IS NOT NULL AND {_USER_SCHEMA}
UNION ALL
SELECT 'grants', pg_catalog.format('column %I.%I.%I %s', n.nspname, c.relname, a.attname, a.attacl)
  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE a.attacl IS NOT NULL AND NOT a.attisdropped AND {_USER_SCHEMA}
UNION ALL
SELECT 'default_privileges', pg_catalog.format('%s %s %s %s', d.defaclrole = {_OWN_ROLE},
       coalesce(n.nspname, '*'), d.defaclobjtype, d.defaclacl)
  FROM pg_catalog.pg_default_acl d LEFT JOIN pg_catalog.pg_namespace n ON n.oid = d.defaclnamespace
UNION ALL
SELECT 'owners', pg_catalog.format('%s %I.%I', c.relkind, n.nspname, c.relname)
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relowner <> {_OWN_ROLE} AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND {_USER_SCHEMA}
UNION ALL
SELECT 'owners', pg_catalog.format('schema %I', n.nspname) FROM pg_catalog.pg_namespace n
 WHERE n.nspowner <> {_OWN_ROLE} AND {_USER_SCHEMA} AND n.nspname <> 'public'
UNION ALL
SELECT 'owners', pg_catalog.format('function %s', p.oid::pg_catalog.regprocedure)
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
 WHERE p.proowner <> {_OWN_ROLE} AND {_USER_SCHEMA}
UNION ALL
SELECT 'sequences', pg_catalog.format('%I.%I %s', s.schemaname, s.sequencename, coalesce(s.last_value::text, 'unused'))
  FROM pg_catalog.pg_sequences s WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema')
   AND s.schemaname NOT LIKE 'pg\\_%'
UNION ALL
SELECT 'large_objects', l.oid::pg_catalog.text FROM pg_catalog.pg_largeobject_metadata l
UNION ALL
SELECT 'database_grants', pg_catalog.format('%s %s %s', w.label, p.privilege,
       pg_catalog.has_database_privilege(w.who, pg_catalog.current_database(), p.privilege))
  FROM (VALUES ('public', 'public'), ('own role', current_user::pg_catalog.text)) AS w (label, who),
       (VALUES ('CONNECT'), ('CREATE'), ('TEMPORARY')) AS p (privilege)
"""
END_OWN_SESSIONS = f"""
SELECT pg_catalog.count(pg_catalog.pg_terminate_backend(a.pid, 5000))
  FROM {{activity}} AS a
 WHERE a.usesysid = {_OWN_ROLE} AND a.datid = {_OWN_DATABASE} AND a.pid <> pg_catalog.pg_backend_pid()
"""
ACTIVE_OWN_SESSIONS = f"""
SELECT pg_catalog.count(*) FROM {{activity}} AS a
 WHERE a.usesysid = {_OWN_ROLE} AND a.state = 'active' AND a.pid <> pg_catalog.pg_backend_pid()
"""
EMPTY_HASH = "d41d8cd98f00b204e9800998ecf8427e"  # md5 of the empty string


def pinned_options(timeout: float, search_path: str = "pg_catalog") -> str:
    """libpq `options` that override whatever the role's or database's defaults say (a setting given
    at connection start wins over `ALTER ROLE/DATABASE ... SET`), bounded by `timeout` seconds."""
    statement_ms = max(1000, int(timeout * 1000 * 0.8))
    settings = {
        "statement_timeout": statement_ms,
        "lock_timeout": min(10_000, statement_ms),
        "idle_in_transaction_session_timeout": statement_ms,
        "default_transaction_read_only": "off",
        "default_transaction_isolation": "read\\ committed",
        "row_security": "off",  # a policy hiding rows is an error, not a quietly smaller table
        "search_path": search_path,
        # The text of a row (its fingerprint) must not depend on output settings the model could change.
        "DateStyle": "ISO",
        "IntervalStyle": "postgres",
        "TimeZone": "UTC",
        "extra_float_digits": 1,
        "bytea_output": "hex",
        "lc_monetary": "C",
        "standard_conforming_strings": "on",
    }
    return " ".join(f"-c {name}={value}" for name, value in settings.items())


async def connect(uri: str, timeout: float, search_path: str = "pg_catalog") -> psycopg.AsyncConnection[Any]:
    """A harness connection with every model-settable default pinned (see `pinned_options`)."""
    return await psycopg.AsyncConnection.connect(
        uri,
        autocommit=True,
        connect_timeout=max(2, min(20, int(timeout))),
        options=pinned_options(timeout, search_path),
    )


async def end_own_sessions(uri: str, timeout: float) -> int:
    """End every other session of the role on this database (the trial's: its locks, its open
    transactions, a statement still sleeping); how many were ended."""
    async with await connect(uri, timeout) as conn:
        query = END_OWN_SESSIONS.format(activity=await _activity_source(conn))
        row = await (await conn.execute(query)).fetchone()
    return int(row[0]) if row else 0


async def _settings_catalog(conn: psycopg.AsyncConnection[Any]) -> str:
    """Where this role may read role and database settings: `pg_db_role_setting`, or on the local twin
    (which closes the shared catalogs to project roles) its filtered view of the same name."""
    row = await (
        await conn.execute("SELECT pg_catalog.has_table_privilege('pg_catalog.pg_db_role_setting', 'SELECT')")
    ).fetchone()
    return "pg_catalog.pg_db_role_setting" if row and row[0] else "pg_localneon.pg_db_role_setting"


async def _activity_source(conn: psycopg.AsyncConnection[Any]) -> str:
    """Where this role may read its sessions: `pg_stat_get_activity(NULL)` (Neon, any PostgreSQL), or on
    the local twin, which closes it to project roles, its filtered `pg_stat_activity` (`ACTIVITY`)."""
    row = await (
        await conn.execute(
            "SELECT pg_catalog.has_function_privilege('pg_catalog.pg_stat_get_activity(integer)', 'EXECUTE')"
        )
    ).fetchone()
    return ACTIVITY if row and row[0] else TWIN_ACTIVITY


async def statements_running(uri: str, timeout: float = 10.0) -> int:
    """How many statements of the role run right now (other than this one): when a tool call hangs,
    whether the database is busy with what the model sent, or the server itself is stuck."""
    async with await connect(uri, timeout) as conn:
        query = ACTIVE_OWN_SESSIONS.format(activity=await _activity_source(conn))
        row = await (await conn.execute(query)).fetchone()
    return int(row[0]) if row else 0


async def fingerprint(uri: str, timeout: float = DEFAULT_CAPTURE_TIMEOUT) -> dict[str, TableFingerprint]:
    """Row count and md5 over the sorted md5s of each row's text, for every user table."""
    tables, _ = await fingerprint_with_environment(uri, timeout)
    return tables


async def fingerprint_with_environment(
    uri: str, timeout: float = DEFAULT_CAPTURE_TIMEOUT
) -> tuple[dict[str, TableFingerprint], dict[str, list[str]]]:
    """The tables' fingerprints and the environment (settings, grants), read in one snapshot."""
    tables: dict[str, TableFingerprint] = {}
    environment: dict[str, list[str]] = {}
    conn = await connect(uri, timeout)
    async with conn, conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        rows = await (await conn.execute(USER_TABLES)).fetchall()
        for schema, table in rows:
            query = sql.SQL(
                "SELECT pg_catalog.count(*), coalesce(pg_catalog.md5(pg_catalog.string_agg(h, '' ORDER BY h)), "
                "{empty}) FROM (SELECT pg_catalog.md5(t::pg_catalog.text) AS h FROM {table} AS t) AS rows"
            ).format(empty=sql.Literal(EMPTY_HASH), table=sql.Identifier(schema, table))
            count, digest = (await (await conn.execute(query)).fetchone()) or (0, EMPTY_HASH)
            tables[f"{schema}.{table}"] = TableFingerprint(rows=int(count), content_hash=str(digest))
        environment_query = ENVIRONMENT.format(
            settings=await _settings_catalog(conn), activity=await _activity_source(conn)
        )
        for kind, value in await (await conn.execute(environment_query)).fetchall():
            environment.setdefault(str(kind), []).append(str(value))
    return tables, {kind: sorted(values) for kind, values in environment.items()}


async def end_sessions(api: NeonAPI, project_id: str, branch_id: str, uri: str, timeout: float) -> str | None:
    """End the trial's sessions on a branch before it is captured; what went wrong, if anything.

    The harness's own connection does it (cheap, and the same on Neon); when the model left the
    database refusing that connection (its own sessions filling a connection limit, say), the
    branch's compute is restarted through the API instead, as Neon's console would."""
    try:
        await end_own_sessions(uri, timeout)
        return None
    except (psycopg.Error, OSError) as error:
        first = f"{type(error).__name__}: {error}".strip()
    try:
        for endpoint in await api.branch_endpoints(project_id, branch_id):
            await api.restart_endpoint(project_id, str(endpoint["id"]))
    except Exception as error:
        return f"ending the trial's sessions: {first}; restarting the compute: {type(error).__name__}: {error}"
    return None


async def capture(
    api: NeonAPI,
    project_id: str,
    branch_id: str,
    database: str,
    role: str,
    *,
    timeout: float = DEFAULT_CAPTURE_TIMEOUT,
    after_model: bool = False,
) -> Snapshot:
    """Snapshot a branch: schema via `GET .../schema?format=sql`, data via the connection URI.

    `after_model`: the model has had the branch, so its sessions are ended first and a failure may be
    its doing (`Snapshot.fault`). The two halves then run at once, the whole within `timeout`."""
    snapshot = Snapshot()
    problems: list[str] = []
    faults: list[str] = []

    def failed(half: str, error: BaseException) -> None:
        fault, reason = classify(error)
        faults.append(fault)
        problems.append(f"{half}: {reason}")

    async def schema() -> None:
        try:
            snapshot.schema_sql = await api.branch_schema(project_id, branch_id, database)
        except Exception as error:
            failed("schema", error)

    async def data() -> None:
        try:
            uri = await api.connection_uri(project_id, branch_id, database, role)
            snapshot.tables, snapshot.environment = await fingerprint_with_environment(uri, timeout)
        except Exception as error:
            failed("data", error)

    async def sessions_ended() -> None:
        try:
            uri = await api.connection_uri(project_id, branch_id, database, role)
            problem = await end_sessions(api, project_id, branch_id, uri, timeout)
        except Exception as error:
            problem = f"ending the trial's sessions: {type(error).__name__}: {error}"
        if problem:
            snapshot.environment["capture_notes"] = [problem]

    try:
        async with asyncio.timeout(timeout):
            if after_model:
                await sessions_ended()
            notes = dict(snapshot.environment)
            await asyncio.gather(schema(), data())
            snapshot.environment.update(notes)
    except TimeoutError:
        faults.append("infrastructure")
        problems.append(f"the capture did not finish within EVAL_CAPTURE_TIMEOUT={timeout:g}s")
    if problems:
        snapshot.error = "; ".join(problems)
        # The model's doing only where every failure is, and only once it has had the branch.
        snapshot.fault = "model" if after_model and all(f == "model" for f in faults) else "infrastructure"
    return snapshot


async def capture_databases(
    api: NeonAPI,
    project_id: str,
    branch_id: str,
    databases: Sequence[str],
    role: str,
    *,
    timeout: float = DEFAULT_CAPTURE_TIMEOUT,
    after_model: bool = False,
) -> Snapshot:
    """`capture` of every database a branch holds for the trial, as one snapshot (`merge_databases`).

    One database (every single-file fixture) is captured exactly as before; more are read one after
    another, each within `timeout`, so a model that damaged the second database is seen there too."""
    parts = {
        database: await capture(api, project_id, branch_id, database, role, timeout=timeout, after_model=after_model)
        for database in databases
    }
    return merge_databases(parts)


def merge_databases(parts: dict[str, Snapshot]) -> Snapshot:
    """Snapshots of a branch's databases as one: the first (default) database's as it is, every other's
    schema appended under a `-- database <name>` header and its tables and settings keyed `<name>/...`.

    The dump counts as complete only when every database's dump was (`Snapshot.dump_complete` looks
    for pg_dump's closing line, which is kept once, at the end, and only then); one failed database
    makes the whole capture failed, its error naming the database."""
    if len(parts) == 1:
        return next(iter(parts.values()))
    merged = Snapshot()
    schemas: list[str] = []
    complete = True
    errors: list[str] = []
    faults: list[str] = []
    for position, (database, part) in enumerate(parts.items()):
        prefix = "" if position == 0 else f"{database}/"
        complete = complete and part.dump_complete
        if part.schema_sql is None:
            complete = False
        else:
            body = "\n".join(line for line in part.schema_sql.splitlines() if DUMP_COMPLETE_MARKER not in line)
            schemas.append(body if position == 0 else f"--\n-- database {database}\n--\n{body}")
        merged.tables.update({f"{prefix}{name}": table for name, table in part.tables.items()})
        merged.environment.update({f"{prefix}{kind}": values for kind, values in part.environment.items()})
        if part.error:
            errors.append(f"database {database}: {part.error}")
            faults.append(part.fault or "infrastructure")
    if schemas:
        merged.schema_sql = "\n".join(schemas) + (f"\n--\n-- {DUMP_COMPLETE_MARKER}\n--\n" if complete else "\n")
    if errors:
        merged.error = "; ".join(errors)
        merged.fault = "model" if all(fault == "model" for fault in faults) else "infrastructure"
    return merged
