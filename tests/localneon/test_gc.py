"""Deleting a project excludes branch creation in it, and orphans are found and dropped.

Real threads against the real PostgreSQL: eight branch creations race a project delete (the
server's threads do the same when a Ctrl-C'd run deletes its sandboxes), and collection runs
while branches are being created.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
from psycopg import sql

from localneon.cluster.locks import ROLE_COMMENT_PREFIX
from localneon.engine import gc, ids
from localneon.engine.branching import Neon
from localneon.engine.errors import NotFound
from tests.localneon.conftest import REPO
from tests.localneon.helpers import Proj


def physical(neon: Neon) -> tuple[set[str], set[str]]:
    """Databases of localneon's naming, and every role, as PostgreSQL has them."""
    with psycopg.connect(neon.cluster.admin_conninfo) as conn:
        dbs = {r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname ~ %s", (gc.DATABASE_PATTERN,))}
        roles = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles")}
    return dbs, roles


def catalogued(neon: Neon) -> set[str]:
    with psycopg.connect(neon.catalog.conninfo) as conn:
        return {r[0] for r in conn.execute("SELECT pg_name FROM databases")}


def test_deleting_a_project_waits_for_branches_being_created(neon: Neon) -> None:
    before, _ = physical(neon)
    for _round in range(2):
        created = neon.create_project("gc-race")
        project_id, role = created.project.id, created.project.role_name

        def make(i: int, project_id: str = project_id) -> str:
            try:
                neon.create_branch(project_id, name=f"race-{i}")
                return "created"
            except Exception as exc:  # without the lock, PostgreSQL errors surface here too
                return type(exc).__name__

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(make, i) for i in range(8)]
            deadline = time.monotonic() + 60
            while len(neon.catalog.list_branches(project_id)) < 2 and time.monotonic() < deadline:
                time.sleep(0.005)
            neon.delete_project(project_id)
            outcomes = [f.result() for f in futures]
        assert neon.catalog.get_project(project_id) is None
        after, roles = physical(neon)
        assert not (after - before - catalogued(neon)), f"branch databases the catalog does not know: {outcomes}"
        assert role not in roles
        assert "created" in outcomes
        assert set(outcomes) <= {"created", NotFound.__name__}, outcomes


def test_collection_leaves_creations_in_flight_alone(neon: Neon, project: Proj) -> None:
    with ThreadPoolExecutor(8) as pool:
        creations = [pool.submit(neon.create_branch, project.id, name=f"gc-{i}") for i in range(6)]
        collections = [pool.submit(gc.collect, neon) for _ in range(2)]
        branches = [f.result().branch for f in creations]
        for collected in collections:
            assert not collected.result().failed
    for branch in branches:
        with psycopg.connect(neon.uri(neon.target(project.id, branch.id))) as conn:
            assert conn.execute("SELECT count(*) FROM posts").fetchone() == (50,)


def test_orphans_are_found_and_dropped(neon: Neon, project: Proj) -> None:
    # What a SIGKILLed server leaves: a cloned database never recorded, a project role without its project.
    orphan_db, orphan_role = f"ln_{ids.random_alnum(10)}_neondb", f"neondb_owner_{ids.random_alnum(6)}"
    with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(orphan_role)))
        comment = sql.SQL("COMMENT ON ROLE {} IS {}")
        admin.execute(comment.format(sql.Identifier(orphan_role), sql.Literal(ROLE_COMMENT_PREFIX + "gone-1")))
        admin.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(orphan_db), sql.Identifier(orphan_role))
        )
    live = neon.project(project.id)
    cli = [sys.executable, "-m", "localneon.gc", "--json"]
    dry = json.loads(subprocess.run([*cli, "--dry-run"], capture_output=True, text=True, check=True, cwd=REPO).stdout)
    assert orphan_db in dry["databases"] and orphan_role in dry["roles"]
    assert live.role_name not in dry["roles"]
    assert not {d.pg_name for d in neon.catalog.project_databases(project.id)} & set(dry["databases"])
    dbs, roles = physical(neon)
    assert orphan_db in dbs and orphan_role in roles  # a dry run drops nothing
    done = subprocess.run(cli, capture_output=True, text=True, check=True, cwd=REPO)
    assert orphan_db in json.loads(done.stdout)["databases"]
    dbs, roles = physical(neon)
    assert orphan_db not in dbs and orphan_role not in roles
    with psycopg.connect(neon.uri(neon.target(project.id))) as conn:
        assert conn.execute("SELECT count(*) FROM posts").fetchone() == (50,)
    assert not gc.collect(neon, dry_run=True)


def plant_orphans(neon: Neon) -> tuple[str, str]:
    """What a killed creation leaves: a cloned database never recorded, a project role without its project."""
    orphan_db, orphan_role = f"ln_{ids.random_alnum(10)}_neondb", f"neondb_owner_{ids.random_alnum(6)}"
    with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(orphan_role)))
        comment = sql.SQL("COMMENT ON ROLE {} IS {}")
        admin.execute(comment.format(sql.Identifier(orphan_role), sql.Literal(ROLE_COMMENT_PREFIX + "gone-2")))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(orphan_db)))
    return orphan_db, orphan_role


def test_a_server_collects_orphans_when_it_starts_and_when_it_stops(neon: Neon, tmp_path: Path) -> None:
    """So the restarted server, the stopped one, or the janitor's (which starts one) leaves none."""
    at_start = plant_orphans(neon)
    ready = tmp_path / "ready.json"
    command = [sys.executable, "-m", "localneon", "--transport", "http", "--port", "0", "--ready-file", str(ready)]
    server = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the server did not start"
        dbs, roles = physical(neon)
        assert at_start[0] not in dbs and at_start[1] not in roles
        at_stop = plant_orphans(neon)
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert "dropped orphaned databases and roles" in stderr and at_start[0] in stderr
    dbs, roles = physical(neon)
    assert at_stop[0] not in dbs and at_stop[1] not in roles, stderr
