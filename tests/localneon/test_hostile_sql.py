"""The local server against the SQL a hostile model sends as its project's role (real PostgreSQL).

Each test makes the move a model could make through `run_sql` (or plays its connection directly,
as `run_sql` would) and checks what the twin guarantees afterwards: its databases are still deleted,
a restore brings the role back, a read-only grant writes nothing, a project reaches no other
project's databases, and the server's own bounds hold whatever the session set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from localneon.cluster.pg import build_uri
from localneon.engine import bounds, gc, guards, isolation
from localneon.engine.branching import Neon, Target
from localneon.engine.errors import LocalNeonError
from localneon.mcp.tools.querying import run_sql, run_sql_read_only, run_sql_transaction_read_only
from tests.localneon.conftest import TOKEN, _spawn_http, stop
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, ok

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
    monkeypatch.setattr(bounds, "STATEMENT_TIMEOUT_S", 1.0)
    started = time.monotonic()
    with pytest.raises(LocalNeonError, match="localneon's 1 s bound"):
        run_sql(neon, {"sql": "SET statement_timeout = 0; SELECT pg_sleep(60)", "projectId": project.id})
    assert time.monotonic() - started < 30


def test_a_huge_result_is_cut_at_the_byte_limit_with_a_note(neon: Neon, project: Proj) -> None:
    text = run_sql(
        neon, {"sql": "SELECT repeat('x', 3000000) AS big FROM generate_series(1, 5)", "projectId": project.id}
    )
    assert len(text.encode()) < bounds.MAX_RESULT_BYTES + 1000
    assert f"result cut at {bounds.MAX_RESULT_BYTES} bytes" in text


def test_sql_over_http_bounds_its_body_and_names_a_bad_one(http_server: HttpServer, neon: Neon, project: Proj) -> None:
    import httpx

    uri = neon.uri(neon.target(project.id))
    headers = {"Neon-Connection-String": uri, "Content-Type": "application/json"}
    with httpx.Client(timeout=60) as http:
        big = http.post(f"{http_server.url}/sql", content=b" " * (11 * 1024 * 1024), headers=headers)
        assert big.status_code == 413 and "request is too large" in big.json()["message"]
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


# Through the real MCP and HTTP paths, on a server of their own with a short statement bound.
BOUND_S = 2


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory, neon: Neon) -> Iterator[tuple[HttpServer, int]]:
    """A localneon HTTP server with LOCALNEON_STATEMENT_TIMEOUT=2, and its pid (for its memory)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LOCALNEON_STATEMENT_TIMEOUT", str(BOUND_S))
        proc, info = _spawn_http(tmp_path_factory.mktemp("bounded"), "--token", TOKEN)
    try:
        yield HttpServer(info["url"], info["mcp_url"], info["api_url"], TOKEN), int(info["pid"])
    finally:
        stop(proc)


def sessions_of(neon: Neon, role: str) -> int:
    with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
        row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (role,)).fetchone()
    return int(row[0]) if row else 0


CATCHES_ITS_CANCEL = (
    "SET statement_timeout = 0; DO $$ BEGIN LOOP BEGIN PERFORM pg_sleep(30); "
    "EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$"
)


@pytest.mark.parametrize("text", ["SET statement_timeout = 0; SELECT pg_sleep(30)", CATCHES_ITS_CANCEL])
async def test_the_watchdog_ends_sql_that_lifts_its_timeout_or_catches_the_cancel(
    bounded: tuple[HttpServer, int], neon: Neon, project: Proj, text: str
) -> None:
    server, _ = bounded
    started = time.monotonic()
    async with http_client(server) as client:
        with anyio.fail_after(30):
            said = err(await call(client, "run_sql", projectId=project.id, sql=text))
    elapsed = time.monotonic() - started
    print(f"\nwatchdog ended {text[:40]!r}... after {elapsed:.1f} s")
    assert f"statement ran longer than localneon's {BOUND_S} s bound" in said
    assert elapsed < BOUND_S + bounds.GRACE_S + 8
    role = neon.project(project.id).role_name
    deadline = time.monotonic() + 5
    while sessions_of(neon, role) and time.monotonic() < deadline:  # the backend is gone, not idle
        time.sleep(0.1)
    assert sessions_of(neon, role) == 0


def memory_mb(pid: int, key: str) -> float:
    """``VmRSS`` (resident now) or ``VmHWM`` (its peak) of process ``pid``, in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key} for process {pid}")


async def test_a_huge_result_is_cut_and_never_held_whole(
    bounded: tuple[HttpServer, int], neon: Neon, project: Proj
) -> None:
    server, pid = bounded
    big = "SELECT repeat('x', 3000000) AS big FROM generate_series(1, 40)"  # 120 MB of rows
    async with http_client(server) as client:
        ok(await call(client, "run_sql", projectId=project.id, sql="SELECT 1"))
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak (VmHWM) starts again from now
        before, started = memory_mb(pid, "VmRSS"), time.monotonic()
        said = ok(await call(client, "run_sql", projectId=project.id, sql=big))
        growth = memory_mb(pid, "VmHWM") - before
    print(
        f"\n40 x 3 MB through run_sql: server RSS {before:.0f} MB, peak growth {growth:.0f} MB, "
        f"{time.monotonic() - started:.1f} s, {len(said)} characters to the model"
    )
    limit = bounds.MAX_RESULT_BYTES
    assert len(said.encode()) <= limit + 200
    assert f"result cut at {limit} bytes: 1 of 40 rows shown" in said
    assert growth < 60  # held whole, the rows alone would be 120 MB (and far under the 2 s bound to read)


def test_sql_over_http_is_bound_in_time_size_and_shape(
    bounded: tuple[HttpServer, int], neon: Neon, project: Proj
) -> None:
    server, _ = bounded
    headers = {"Neon-Connection-String": neon.uri(neon.target(project.id)), "Content-Type": "application/json"}
    limit = bounds.MAX_RESULT_BYTES
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        huge = http.post("/sql", json={"query": "SELECT repeat('x', 400000) FROM generate_series(1, 10)"})
        assert huge.status_code == 507 and huge.json()["message"] == f"response is too large (max is {limit} bytes)"
        for body, problem in (
            (b'{"query": ', "not valid JSON"),
            (b"\xff\xfe{}", "not UTF-8"),
            (b'{"query": "SELECT \'\\ud800\'"}', "not valid Unicode"),
        ):
            answer = http.post("/sql", content=body)
            assert answer.status_code == 400 and problem in answer.json()["message"], answer.text
        started = time.monotonic()
        batch = {"queries": [{"query": "SET statement_timeout = 0"}, {"query": "SELECT pg_sleep(30)"}]}
        slept = http.post("/sql", json=batch)
        assert slept.status_code == 400 and f"localneon's {BOUND_S} s bound" in slept.json()["message"]
        assert time.monotonic() - started < BOUND_S + bounds.GRACE_S + 8
        assert http.post("/sql", json={"query": "SELECT count(*) AS n FROM posts"}).json()["rows"] == [{"n": "50"}]


def test_branching_from_a_parent_with_an_idle_transaction_does_not_stall(
    http_server: HttpServer, neon: Neon, project: Proj
) -> None:
    idle = psycopg.connect(neon.uri(neon.target(project.id)))
    idle.execute("SELECT count(*) FROM posts")  # now idle in transaction, as a model can leave it
    try:
        started = time.monotonic()
        with http_server.api() as api:
            made = api.post(f"/projects/{project.id}/branches", json={"branch": {"name": "from-busy"}})
        elapsed = time.monotonic() - started
        print(f"\nbranch from a parent with an idle transaction: {elapsed:.1f} s")
        assert made.status_code == 201, made.text
        assert elapsed < 9  # PostgreSQL's own 5 s wait, then the session is ended (it was 45 s and more)
        with pytest.raises(psycopg.OperationalError):
            idle.execute("SELECT 1")
    finally:
        idle.close()


@pytest.fixture
def stranger(neon: Neon) -> Iterator[Target]:
    """Another project on the cluster, with a table of its own."""
    created = neon.create_project("hostile-stranger")
    target = neon.target(created.project.id)
    with psycopg.connect(neon.uri(target)) as conn:
        conn.execute("CREATE TABLE secrets (v text)")
    try:
        yield target
    finally:
        if neon.catalog.get_project(created.project.id) is not None:
            neon.delete_project(created.project.id)


async def test_read_only_sql_runs_as_a_role_that_cannot_write_or_leave_its_project(
    http_server: HttpServer, neon: Neon, project: Proj, stranger: Target
) -> None:
    read_only = dataclasses.replace(http_server, mcp_url=f"{http_server.mcp_url}?readonly=true")
    as_role(neon, project, "ALTER TABLE posts ENABLE ROW LEVEL SECURITY")  # the owner still reads every row
    async with http_client(read_only) as client:
        for text in (
            "COMMIT; CREATE TABLE escaped_1 (id int)",
            "SET TRANSACTION READ WRITE; CREATE TABLE escaped_2 (id int)",
            "CREATE TEMP TABLE escaped_3 (id int)",
            "SELECT 1; SELECT 2",  # one statement per query, as Neon's driver sends it
        ):
            err(await call(client, "run_sql", projectId=project.id, sql=text))
        for statements in (
            ["SET transaction_read_only = off", "CREATE TABLE escaped_4 (id int)"],
            ["COMMIT", "CREATE TABLE escaped_5 (id int)"],
        ):
            err(await call(client, "run_sql_transaction", projectId=project.id, sqlStatements=statements))
        who = ok(
            await call(client, "run_sql", projectId=project.id, sql="SELECT current_user AS who, count(*) FROM posts")
        )
    assert '"count": 50' in who
    mine = neon.target(project.id)
    assert guards.readonly_role(project.id) in who
    tables = run_sql(
        neon, {"projectId": project.id, "sql": "SELECT relname FROM pg_class WHERE relname LIKE 'escaped%'"}
    )
    assert json.loads(tables) == []
    # Its credentials reach no other database: not another project's, not postgres or template1.
    conninfo = neon.readonly_conninfo(mine)
    for dbname in (stranger.database.pg_name, "postgres", "template1"):
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(make_conninfo(conninfo, dbname=dbname), connect_timeout=10).close()


def test_a_read_only_batch_over_http_cannot_commit_its_way_out(
    http_server: HttpServer, neon: Neon, project: Proj
) -> None:
    """Neon's own MCP server sends run_sql_transaction under a read-only grant as such a batch."""
    headers = {"Neon-Connection-String": neon.uri(neon.target(project.id)), "Neon-Batch-Read-Only": "true"}
    escapes = (
        ["COMMIT", "CREATE TABLE escaped (id int)"],
        ["COMMIT AND CHAIN", "SET transaction_read_only = off", "CREATE TABLE escaped (id int)"],
        ["SET TRANSACTION READ WRITE", "CREATE TABLE escaped (id int)"],
        ["ROLLBACK", "START TRANSACTION READ WRITE", "CREATE TABLE escaped (id int)"],
    )
    with httpx.Client(base_url=http_server.url, headers=headers, timeout=60) as http:
        refused = [http.post("/sql", json={"queries": [{"query": q} for q in queries]}) for queries in escapes]
        read = http.post("/sql", json={"queries": [{"query": "SELECT count(*) AS n FROM posts"}]})
    for answer in refused:  # the transaction stays READ ONLY, whatever the queries end or set
        assert answer.status_code == 400, answer.text
        assert answer.json()["code"] == "25006" or "read-write mode must be set before any query" in answer.text
    assert read.json()["results"][0]["rows"] == [{"n": "50"}]
    tables = run_sql(neon, {"projectId": project.id, "sql": "SELECT relname FROM pg_class WHERE relname = 'escaped'"})
    assert json.loads(tables) == []


def test_a_role_another_project_granted_privileges_to_is_still_deleted(
    neon: Neon, project: Proj, stranger: Target
) -> None:
    theirs = stranger.project.role_name
    # A model on this project finds the other project's role name and grants it privileges here,
    # so that DROP ROLE of it would refuse ("privileges for table posts").
    own = neon.target(project.id).database.pg_name
    as_role(neon, project, f'GRANT SELECT ON posts TO "{theirs}"', f'GRANT CONNECT ON DATABASE "{own}" TO "{theirs}"')
    neon.delete_project(stranger.project.id)
    with psycopg.connect(neon.cluster.admin_conninfo) as admin:
        left = admin.execute("SELECT rolname FROM pg_roles WHERE rolname = %s", (theirs,)).fetchall()
    assert left == []
    assert neon.catalog.get_project(stranger.project.id) is None


def test_collection_leaves_a_live_projects_read_only_role_alone(neon: Neon, project: Proj) -> None:
    run_sql_read_only(neon, {"projectId": project.id, "sql": "SELECT 1"})
    found = gc.collect(neon, dry_run=True)
    assert guards.readonly_role(project.id) not in found.roles


async def test_shared_catalogs_name_no_other_project(
    http_server: HttpServer, neon: Neon, project: Proj, stranger: Target
) -> None:
    as_role(neon, Proj(stranger.project.id, stranger.branch.id), "ALTER ROLE current_user SET work_mem = '7MB'")
    peeks = {
        "SELECT description FROM pg_shdescription": stranger.project.id,
        "SELECT member::regrole::text, roleid::regrole::text FROM pg_auth_members": stranger.project.role_name,
        "SELECT setrole::regrole::text, setconfig FROM pg_db_role_setting": stranger.project.role_name,
    }
    async with http_client(http_server) as client:
        for peek, name in peeks.items():
            said = ok(await call(client, "run_sql", projectId=project.id, sql=peek))
            assert name not in said, (peek, said)
        own = ok(await call(client, "run_sql", projectId=project.id, sql="SELECT description FROM pg_shdescription"))
    assert project.id in own


def test_a_copy_of_a_database_sealed_before_the_login_rule_gets_it(neon: Neon, project: Proj, stranger: Target) -> None:
    main = neon.target(project.id)
    with psycopg.connect(neon.cluster.conninfo(main.database.pg_name), autocommit=True) as admin:
        admin.execute(f"DROP EVENT TRIGGER {isolation.LOGIN_TRIGGER}")  # as an older localneon sealed it
    psycopg.connect(neon.cluster.conninfo(main.database.pg_name)).close()  # a login clears dathasloginevt
    with psycopg.connect(neon.cluster.admin_conninfo) as admin:
        flag = admin.execute("SELECT dathasloginevt FROM pg_database WHERE datname = %s", (main.database.pg_name,))
        assert flag.fetchone() == (False,)
    child = neon.create_branch(project.id, name="resealed").branch
    copy = neon.target(project.id, child.id)
    theirs = build_uri(
        neon.uri(copy),
        dbname=copy.database.pg_name,
        user=stranger.project.role_name,
        password=stranger.project.role_password,
    )
    as_role(neon, project, f'GRANT CONNECT ON DATABASE "{copy.database.pg_name}" TO PUBLIC', branch=child.id)
    with pytest.raises(psycopg.OperationalError, match="belongs to another project"):
        psycopg.connect(theirs, connect_timeout=10).close()
