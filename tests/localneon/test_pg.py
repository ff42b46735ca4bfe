"""The embedded cluster: configuration, pg_dump discovery, the pg CLI, and URI building."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

from localneon.cluster.pg import build_uri, find_pg_dump, server_major
from localneon.engine.branching import Neon
from tests.localneon.helpers import REPO


def test_cluster_has_pg_stat_statements_and_matching_pg_dump(neon: Neon) -> None:
    with psycopg.connect(neon.cluster.admin_conninfo) as conn:
        row = conn.execute("SHOW shared_preload_libraries").fetchone()
    assert row is not None and "pg_stat_statements" in row[0]
    major = server_major(neon.cluster.admin_conninfo)
    version = subprocess.run([find_pg_dump(major), "--version"], capture_output=True, text=True, check=True).stdout
    assert f" {major}." in version


def test_a_projects_role_logs_in_over_tcp_with_a_cheaply_hashed_password(neon: Neon) -> None:
    """Its verifier is hashed 16 times, not 4096: each login's client work is a fraction of a millisecond."""
    if not neon.cluster.embedded:
        return  # a DATABASE_URL server keeps its own settings
    created = neon.create_project("scram-iterations")
    try:
        with psycopg.connect(neon.cluster.admin_conninfo) as conn:
            query = "SELECT rolpassword FROM pg_authid WHERE rolname = %s"
            row = conn.execute(query, (created.project.role_name,)).fetchone()
        assert row is not None and row[0].startswith("SCRAM-SHA-256$16:"), row
        uri = neon.uri(neon.target(created.project.id))
        assert "@127.0.0.1:" in uri, uri  # over TCP, where a password is asked for
        with psycopg.connect(uri) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (created.project.role_name,)
    finally:
        neon.delete_project(created.project.id)


def test_pg_cli_status_reuses_the_running_server(neon: Neon) -> None:
    if not neon.cluster.embedded:
        return
    out = subprocess.run(
        [sys.executable, "-m", "localneon.pg", "status"], capture_output=True, text=True, cwd=REPO, env={**os.environ}
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == neon.cluster.admin_conninfo


def test_build_uri_for_socket_and_tcp() -> None:
    socket = build_uri("postgresql://postgres:@/postgres?host=/tmp/sock", dbname="db1", user="u", password="p w")
    assert socket == "postgresql://u:p%20w@/db1?host=/tmp/sock"
    tcp = build_uri("postgresql://admin:x@127.0.0.1:5433/postgres?sslmode=disable", dbname="d", user="u", password="p")
    assert tcp == "postgresql://u:p@127.0.0.1:5433/d?sslmode=disable"


def test_concurrent_starts_share_one_server(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["LOCALNEON_PGDATA"] = str(pgdata)
    command = [sys.executable, "-m", "localneon.pg", "start"]
    procs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
        for _ in range(3)
    ]
    try:
        outputs = [p.communicate(timeout=180) for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], [o[1] for o in outputs]
        uris = {out.strip() for out, _ in outputs}
        assert len(uris) == 1
        with psycopg.connect(uris.pop()) as conn:
            row = conn.execute("SHOW shared_preload_libraries").fetchone()
        assert row is not None and "pg_stat_statements" in row[0]
    finally:
        stop = [sys.executable, "-m", "localneon.pg", "stop"]
        subprocess.run(stop, env=env, cwd=REPO, capture_output=True, timeout=120)
    status = subprocess.run(
        [sys.executable, "-m", "localneon.pg", "status"], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert status.returncode == 1 and "not running" in status.stdout
