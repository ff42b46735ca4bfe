"""``python -m localneon.measure.least_work``: the database work one migration trial cannot avoid, timed.

The least work a harness trial is compared with (`make bench`'s overhead ratio): on the same cluster,
clone the fixture database by template (main), dump main's schema and fingerprint its data, clone
main again (the temporary branch), apply the migration there, dump and fingerprint main again, drop
both. No API, no MCP, no catalog: only what PostgreSQL itself must do. Prints one JSON object with
the samples in milliseconds, so another process can read it (the harness never imports localneon).
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import time
from pathlib import Path

import psycopg
from psycopg import sql

from localneon.cluster.pg import find_pg_dump, get_cluster, server_major

USER_TABLES = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%' ORDER BY 1, 2
"""


def fingerprint(conninfo: str) -> dict[str, tuple[int, str]]:
    """Row count and an order-independent md5 per table (the same work the harness's capture does)."""
    found: dict[str, tuple[int, str]] = {}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for schema, table in conn.execute(USER_TABLES).fetchall():
            query = sql.SQL(
                "SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), '') "
                "FROM (SELECT md5(t::text) AS h FROM {} AS t) AS rows"
            ).format(sql.Identifier(schema, table))
            row = conn.execute(query).fetchone()
            found[f"{schema}.{table}"] = (int(row[0]), str(row[1])) if row else (0, "")
    return found


def dump_schema(pg_dump: str, conninfo: str) -> str:
    flags = ["--schema-only", "--no-owner", "--no-privileges"]
    return subprocess.run([pg_dump, *flags, "--dbname", conninfo], capture_output=True, text=True, check=True).stdout


def one_trial(
    admin: psycopg.Connection[tuple[object, ...]], cluster_info: str, fixture_db: str, migration: str
) -> float:
    """The unavoidable work of one trial, in milliseconds."""
    cluster = get_cluster()
    pg_dump = find_pg_dump(server_major(cluster_info))
    main, branch = f"floor_main_{secrets.token_hex(4)}", f"floor_branch_{secrets.token_hex(4)}"
    started = time.perf_counter()
    try:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                *map(sql.Identifier, (main, fixture_db))
            )
        )
        dump_schema(pg_dump, cluster.conninfo(main))
        fingerprint(cluster.conninfo(main))
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(*map(sql.Identifier, (branch, main)))
        )
        with psycopg.connect(cluster.conninfo(branch), autocommit=True) as conn, conn.transaction():
            conn.execute(migration.encode())
        dump_schema(pg_dump, cluster.conninfo(main))
        fingerprint(cluster.conninfo(main))
    finally:
        for name in (branch, main):
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localneon.measure.least_work", description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", type=Path, required=True, help="fixture SQL file")
    parser.add_argument("--migration", required=True, help="the migration SQL applied on the branch")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    cluster = get_cluster()
    fixture_db = f"floor_fixture_{secrets.token_hex(4)}"
    samples: list[float] = []
    with psycopg.connect(cluster.admin_conninfo, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(fixture_db)))
        try:
            with psycopg.connect(cluster.conninfo(fixture_db), autocommit=True) as conn, conn.transaction():
                conn.execute(args.fixture.read_text(encoding="utf-8").encode())
            for _ in range(args.runs):
                samples.append(one_trial(admin, cluster.admin_conninfo, fixture_db, args.migration))
        finally:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(fixture_db)))
    print(json.dumps({"median_ms": statistics.median(samples), "samples_ms": samples}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
