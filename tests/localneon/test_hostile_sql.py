"""The local server against the SQL a hostile model sends as its project's role (real PostgreSQL).

Each test makes the move a model could make through `run_sql` (or plays its connection directly,
as `run_sql` would) and checks what the twin guarantees afterwards: its databases are still deleted,
a restore brings the role back, a read-only grant writes nothing, a project reaches no other
project's databases, and the server's own bounds hold whatever the session set.
"""

from __future__ import annotations

import contextlib
import time

import psycopg
import pytest

from localneon import sql
from localneon.branching import Neon
from localneon.errors import LocalNeonError
from localneon.pg import build_uri
from localneon.tools.querying import run_sql, run_sql_read_only, run_sql_transaction_read_only
from tests.localneon.helpers import HttpServer, Proj

OWN_DATABASE = "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I {}', current_database()); END $$"


def as_role(neon: Neon, project: Proj, *statements: str, branch: str | None = None) -> None:
    with psycopg.connect(neon.uri(neon.target(project.id, branch)), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement.encode())


def databases(neon: Neon) -> set[str]:
    with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
        return {str(row[0]) for row in admin.execute("SELECT datname FROM pg_database").fetchall()}


def test_a_database_its_owner_made_a_template_and_closed_is_still_deleted(neon: Neon, project: Proj) -> None:
    pg_name = neon.target(project.id).database.pg_name
    as_role(
        neon,
        project,
        OWN_DATABASE.format("IS_TEMPLATE true"),
        OWN_DATABASE.format("CONNECTION LIMIT 0"),
    )
    neon.delete_project(project.id)
    assert pg_name not in databases(neon)


def test_a_restore_brings_the_role_back_as_the_twin_made_it(neon: Neon, project: Proj) -> None:
    golden = neon.create_branch(project.id, name="golden").branch
    as_role(
        neon,
        project,
        "ALTER ROLE current_user SET default_transaction_read_only = on",
        "ALTER ROLE current_user SET statement_timeout = '1ms'",
        "ALTER ROLE current_user PASSWORD 'the-models-own'",
    )
    neon.restore_branch(project.id, project.main, golden.id)
    as_role(neon, project, "CREATE TABLE written_after_restore (id int)")  # the catalog's password, writable


@pytest.mark.parametrize(
    "texts",
    [
        ["COMMIT; CREATE TABLE escaped (id int)"],
        ["SET TRANSACTION READ WRITE; CREATE TABLE escaped (id int)"],
        ["SET transaction_read_only = off; CREATE TABLE escaped (id int)"],
        ["CREATE TEMP TABLE escaped (id int)"],
        ["DELETE FROM posts"],
    ],
)
def test_no_text_writes_under_a_read_only_grant(neon: Neon, project: Proj, texts: list[str]) -> None:
    for text in texts:
        with pytest.raises(LocalNeonError):
            run_sql_read_only(neon, {"sql": text, "projectId": project.id})
    with pytest.raises(LocalNeonError):  # one transaction, statement by statement
        run_sql_transaction_read_only(
            neon, {"sqlStatements": ["SET transaction_read_only = off", *texts], "projectId": project.id}
        )
    assert "title 1" in run_sql_read_only(
        neon, {"sql": "SELECT title FROM posts ORDER BY id LIMIT 1", "projectId": project.id}
    )
    tables = run_sql(
        neon,
        {"sql": "SELECT relname, relacl FROM pg_class WHERE relname IN ('escaped', 'posts')", "projectId": project.id},
    )
    assert "escaped" not in tables and "=r/" not in tables
    assert '"count": 50' in run_sql(neon, {"sql": "SELECT count(*) FROM posts", "projectId": project.id})


def test_a_project_role_reaches_no_database_but_its_own_projects(neon: Neon, project: Proj) -> None:
    other = neon.create_project("hostile-other")
    try:
        mine = neon.target(project.id)
        theirs = neon.target(other.project.id)
        as_role(neon, project, OWN_DATABASE.replace("ALTER DATABASE %I {}", "GRANT CONNECT ON DATABASE %I TO PUBLIC"))
        mine_uri = neon.uri(mine)
        for dbname in ("postgres", "template1", theirs.database.pg_name):
            uri = build_uri(mine_uri, dbname=dbname, user=mine.project.role_name, password=mine.project.role_password)
            with pytest.raises(psycopg.OperationalError):
                psycopg.connect(uri, connect_timeout=10).close()
        # The other project's role cannot come into this one's database, whatever it granted.
        into_mine = build_uri(
            mine_uri, dbname=mine.database.pg_name, user=theirs.project.role_name, password=theirs.project.role_password
        )
        with pytest.raises(psycopg.OperationalError, match="belongs to another project"):
            psycopg.connect(into_mine, connect_timeout=10).close()
    finally:
        neon.delete_project(other.project.id)


def test_the_statement_bound_holds_when_the_session_lifts_its_own(
    neon: Neon, project: Proj, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sql, "STATEMENT_TIMEOUT_S", 1.0)
    started = time.monotonic()
    with pytest.raises(LocalNeonError, match="localneon's 1 s bound"):
        run_sql(neon, {"sql": "SET statement_timeout = 0; SELECT pg_sleep(60)", "projectId": project.id})
    assert time.monotonic() - started < 30


def test_a_huge_result_is_cut_at_the_byte_limit_with_a_note(neon: Neon, project: Proj) -> None:
    text = run_sql(
        neon, {"sql": "SELECT repeat('x', 3000000) AS big FROM generate_series(1, 5)", "projectId": project.id}
    )
    assert len(text.encode()) < sql.MAX_RESULT_BYTES + 1000
    assert f"result cut at {sql.MAX_RESULT_BYTES} bytes" in text


def test_sql_over_http_bounds_its_body_and_names_a_bad_one(http_server: HttpServer, neon: Neon, project: Proj) -> None:
    import httpx

    uri = neon.uri(neon.target(project.id))
    headers = {"Neon-Connection-String": uri, "Content-Type": "application/json"}
    with httpx.Client(timeout=60) as http:
        big = http.post(f"{http_server.url}/sql", content=b" " * (11 * 1024 * 1024), headers=headers)
        assert big.status_code == 413 and "byte limit" in big.json()["message"]
        latin = http.post(
            f"{http_server.url}/sql", content='{"query": "SELECT \'\xe9\'"}'.encode("latin-1"), headers=headers
        )
        assert latin.status_code == 400 and "not UTF-8" in latin.json()["message"]


def test_a_compute_restart_ends_the_models_sessions(http_server: HttpServer, neon: Neon, project: Proj) -> None:
    session = psycopg.connect(neon.uri(neon.target(project.id)), autocommit=True)
    try:
        session.execute("BEGIN")
        session.execute("LOCK TABLE posts IN ACCESS EXCLUSIVE MODE")
        with http_server.api() as api:
            [endpoint] = api.get(f"/projects/{project.id}/branches/{project.main}/endpoints").json()["endpoints"]
            answer = api.post(f"/projects/{project.id}/endpoints/{endpoint['id']}/restart")
        assert answer.status_code == 200, answer.text
        assert [op["action"] for op in answer.json()["operations"]] == ["suspend_compute", "start_compute"]
        with pytest.raises(psycopg.OperationalError):
            session.execute("SELECT 1")
    finally:
        with contextlib.suppress(Exception):
            session.close()
