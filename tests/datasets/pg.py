"""Real PostgreSQL for dataset and scorer tests: the embedded server, scratch databases, dumps.

Fixtures are loaded as a non-superuser database owner (as on Neon), so a fixture that needs
superuser powers fails here rather than in a live run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from harness.recording.records import Snapshot, TableFingerprint
from localneon.cluster.pg import Cluster, embedded_bin, start_embedded
from tests.pgdirs import SCORER_PGDATA as PGDATA

REPO_ROOT = Path(__file__).resolve().parents[2]
OWNER_ROLE = "fixture_owner"


def start_server() -> Cluster:
    """Start (or join) the embedded PostgreSQL used by these tests (`make test` stops it)."""
    server = start_embedded(PGDATA)
    with psycopg.connect(server.admin_conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (OWNER_ROLE,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB").format(sql.Identifier(OWNER_ROLE)))
    return server


@contextmanager
def scratch_database(server: Cluster, label: str) -> Iterator[str]:
    """A fresh empty database owned by the non-superuser role; yields its conninfo; dropped after.

    Since PostgreSQL 15 the public schema belongs to pg_database_owner, so the owner can create in it.
    """
    name = f"t_{label}_{os.getpid()}"
    admin = server.admin_conninfo
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(OWNER_ROLE)))
    try:
        yield make_conninfo(admin, dbname=name, user=OWNER_ROLE)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def load_fixture(conninfo: str, fixture: Path) -> None:
    """Run a fixture file in one transaction, as the harness does."""
    with psycopg.connect(conninfo) as conn, conn.transaction():
        conn.execute(fixture.read_text(encoding="utf-8"))


def dump_schema(conninfo: str) -> str:
    """`pg_dump --schema-only` of the database, exactly as PostgreSQL 18 writes it."""
    result = subprocess.run(
        [str(embedded_bin() / "pg_dump"), "--schema-only", "--no-password", "--dbname", conninfo],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.stdout


def fingerprints(conninfo: str) -> dict[str, TableFingerprint]:
    """Row count and an order-independent hash of every user table."""
    found: dict[str, TableFingerprint] = {}
    with psycopg.connect(conninfo) as conn:
        tables = conn.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
            " ORDER BY 1, 2"
        ).fetchall()
        for schema, table in tables:
            query = sql.SQL(
                "SELECT count(*), md5(coalesce(string_agg(h, '' ORDER BY h), ''))"
                " FROM (SELECT md5(t::text) AS h FROM {} t) s"
            ).format(sql.Identifier(schema, table))
            row = conn.execute(query).fetchone()
            assert row is not None
            found[f"{schema}.{table}"] = TableFingerprint(rows=row[0], content_hash=row[1])
    return found


def snapshot(conninfo: str) -> Snapshot:
    """What the harness captures of a branch: the dump and the fingerprints."""
    return Snapshot(schema_sql=dump_schema(conninfo), tables=fingerprints(conninfo))


def execute_and_roll_back(conninfo: str, statements: list[str]) -> Any:
    """Run statements in one transaction and roll it back; raise on any error. The last statement's
    single value, or None when it returns no single value (a write returns no rows)."""
    with psycopg.connect(conninfo) as conn:
        rows: list[Any] = []
        for statement in statements:
            cursor = conn.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
        conn.rollback()
    return rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 else None
