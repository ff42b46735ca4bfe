"""A hostile model's SQL against the shared disk and memory, through the real endpoints (MCP over HTTP
and ``POST /sql``) of a local server started with small bounds.

Each path a model's SQL takes is played: ``run_sql``, ``run_sql_transaction``,
``explain_sql_statement``, ``prepare_database_migration``, ``prepare_query_tuning`` and ``/sql``
(one query and a batch). What must hold: no call writes more temporary files than the temp-file
limit, whatever the session tries to lift first; no call grows its branch database past the size
limit (and one that starts past it may still read and delete); no query holds more memory than a
PostgreSQL process may map. Sizes are read by the superuser, beside the call, not by the code under
test.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from localneon.engine.branching import Neon
from localneon.engine.catalog import Database
from tests.localneon.conftest import TOKEN, _spawn_http, stop
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, ok

TEMP_LIMIT_MB = 16
SIZE_LIMIT_MB = 40
MB = 1024 * 1024
# A sort of 4 million integers spills some 100 MB of temporary files past a 4 MB work_mem.
SPILLING_SORT = "SELECT count(*) FROM (SELECT g FROM generate_series(1, 4000000) AS g ORDER BY g DESC) AS s"
# What the session tries first to lift the limit: each is refused (the sort then runs under it).
LIFTS = (
    "SET temp_file_limit = -1",
    "ALTER ROLE current_user RESET temp_file_limit",
    "ALTER ROLE current_user SET temp_file_limit = -1",
    "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET temp_file_limit = -1', current_database()); END $$",
)
# 320 MB of bytes that do not compress, as 40 large objects of 8 MB.
LARGE_OBJECTS = (
    "DO $$ BEGIN FOR i IN 1..40 LOOP PERFORM lo_from_bytea(0, decode(string_agg(md5((i * 1000000 + g)::text), ''), "
    "'hex')) FROM generate_series(1, 500000) AS g; END LOOP; END $$"
)
# About 1 GB of rows: the size bound, not the statement, must end it.
FILLER = "SELECT g, repeat(md5(g::text), 30) AS pad FROM generate_series(1, 1000000) AS g"


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory, neon: Neon) -> Iterator[HttpServer]:
    """A localneon HTTP server whose projects' roles hold a 16 MB temp-file limit and whose calls
    may not grow a branch database past 40 MB."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LOCALNEON_TEMP_FILE_LIMIT_MB", str(TEMP_LIMIT_MB))
        env.setenv("LOCALNEON_BRANCH_SIZE_LIMIT_MB", str(SIZE_LIMIT_MB))
        proc, info = _spawn_http(tmp_path_factory.mktemp("bounded-disk"), "--token", TOKEN)
    try:
        yield HttpServer(info["url"], info["mcp_url"], info["api_url"], TOKEN)
    finally:
        stop(proc)


@pytest.fixture
def project(bounded: HttpServer, neon: Neon) -> Iterator[Proj]:
    """A project made through the bounded server's API (so its role carries that server's limit),
    with a small ``posts`` table on main."""
    with bounded.api() as api:
        made = api.post("/projects", json={"project": {"name": "hostile-bounds"}})
        assert made.status_code == 201, made.text
        body = made.json()
    created = Proj(body["project"]["id"], body["branch"]["id"])
    with psycopg.connect(neon.uri(neon.target(created.id)), autocommit=True) as conn:
        conn.execute("CREATE TABLE posts (id int PRIMARY KEY, title text)")
        conn.execute("INSERT INTO posts SELECT g, 'title ' || g FROM generate_series(1, 50) AS g")
    try:
        yield created
    finally:
        with bounded.api() as api:
            api.delete(f"/projects/{created.id}")


def temp_bytes(neon: Neon, database: Database) -> int:
    """The temporary-file bytes PostgreSQL counted for ``database`` so far (``pg_stat_database``)."""
    with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
        row = admin.execute(
            "SELECT temp_bytes FROM pg_stat_database WHERE datname = %s", (database.pg_name,)
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def settled_temp_bytes(neon: Neon, database: Database, before: int) -> int:
    """The count once the ended backend's statistics have reached it (they are flushed as it exits)."""
    deadline = time.monotonic() + 10
    value = temp_bytes(neon, database)
    while value == before and time.monotonic() < deadline:
        time.sleep(0.1)
        value = temp_bytes(neon, database)
    return value


def sql_over_http(server: HttpServer, uri: str, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(timeout=120) as http:
        return http.post(f"{server.url}/sql", json=body, headers={"Neon-Connection-String": uri})


async def test_no_path_writes_more_temporary_files_than_the_limit(
    bounded: HttpServer, neon: Neon, project: Proj
) -> None:
    main = neon.target(project.id)
    uri = neon.uri(main)
    said: dict[str, str] = {}
    written: dict[str, int] = {}

    async def played(label: str, tool: str, **args: Any) -> None:
        before = temp_bytes(neon, main.database)
        async with http_client(bounded) as client:
            said[label] = err(await call(client, tool, projectId=project.id, **args))
        written[label] = settled_temp_bytes(neon, main.database, before) - before

    async with http_client(bounded) as client:
        for lift in LIFTS:  # the session cannot lift the limit on itself or its database
            refused = err(await call(client, "run_sql", projectId=project.id, sql=lift))
            assert 'permission denied to set parameter "temp_file_limit"' in refused, (lift, refused)
        # Its RESET ALL runs, and leaves what only a superuser may reset.
        ok(await call(client, "run_sql", projectId=project.id, sql="ALTER ROLE current_user RESET ALL"))
        held = ok(await call(client, "run_sql", projectId=project.id, sql="SHOW temp_file_limit"))
    assert f'"{TEMP_LIMIT_MB}MB"' in held, held
    await played("run_sql", "run_sql", sql=f"SET work_mem = '64kB'; {SPILLING_SORT}")
    await played("run_sql_transaction", "run_sql_transaction", sqlStatements=["SELECT 1", SPILLING_SORT])
    await played("explain_sql_statement", "explain_sql_statement", sql=SPILLING_SORT, analyze=True)
    # The migration and tuning tools run on a temporary branch: the limit is the role's, so it holds there too.
    async with http_client(bounded) as client:
        migration = err(
            await call(
                client,
                "prepare_database_migration",
                projectId=project.id,
                migrationSql="CREATE TABLE sorted AS SELECT g FROM generate_series(1, 4000000) AS g ORDER BY g DESC",
            )
        )
        tuning = err(
            await call(client, "prepare_query_tuning", projectId=project.id, databaseName="neondb", sql=SPILLING_SORT)
        )
    said |= {"prepare_database_migration": migration, "prepare_query_tuning": tuning}
    before = temp_bytes(neon, main.database)
    one = sql_over_http(bounded, uri, {"query": SPILLING_SORT})
    batch = sql_over_http(bounded, uri, {"queries": [{"query": "SELECT 1"}, {"query": SPILLING_SORT}]})
    written["/sql"] = settled_temp_bytes(neon, main.database, before) - before
    said |= {"/sql": one.json()["message"], "/sql batch": batch.json()["message"]}
    assert one.status_code == batch.status_code == 400
    print(f"\ntemporary bytes written per call (limit {TEMP_LIMIT_MB} MB): {written}")
    for label, message in said.items():
        assert f'temporary file size exceeds "temp_file_limit" ({TEMP_LIMIT_MB * 1024}kB)' in message, (label, message)
    for label, count in written.items():
        # The sort wanted some 100 MB; it wrote up to the limit (the two /sql requests twice that), no more.
        calls = 2 if label == "/sql" else 1
        assert 0 < count <= calls * (TEMP_LIMIT_MB + 1) * MB, (label, count)


class PeakSize:
    """The largest size a database reached while a block ran, read by the superuser every 20 ms."""

    def __init__(self, neon: Neon, database: Database) -> None:
        self.neon, self.database, self.peak = neon, database, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        with psycopg.connect(self.neon.cluster.admin_conninfo, autocommit=True) as admin:
            while not self._stop.is_set():
                row = admin.execute("SELECT pg_database_size(%s)", (self.database.pg_name,)).fetchone()
                self.peak = max(self.peak, int(row[0]) if row else 0)
                time.sleep(0.02)

    def __enter__(self) -> PeakSize:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def database_size(neon: Neon, database: Database) -> int:
    with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
        row = admin.execute("SELECT pg_database_size(%s)", (database.pg_name,)).fetchone()
    return int(row[0]) if row else 0


async def test_no_call_grows_a_branch_past_its_size_limit(bounded: HttpServer, neon: Neon, project: Proj) -> None:
    main = neon.target(project.id)
    limit = SIZE_LIMIT_MB * MB
    message = f"could not extend file because project size limit ({SIZE_LIMIT_MB} MB) has been exceeded"
    peaks: dict[str, int] = {}
    async with http_client(bounded) as client:
        for label, tool, args in (
            ("run_sql", "run_sql", {"sql": f"CREATE TABLE filled AS {FILLER}"}),
            ("run_sql_transaction", "run_sql_transaction", {"sqlStatements": [f"CREATE TABLE filled AS {FILLER}"]}),
            (
                "large objects",
                "run_sql",
                {"sql": LARGE_OBJECTS},
            ),
            ("unlogged", "run_sql", {"sql": f"CREATE UNLOGGED TABLE filled AS {FILLER}"}),
        ):
            with PeakSize(neon, main.database) as watched:
                said = err(await call(client, tool, projectId=project.id, **args))
            peaks[label] = watched.peak
            assert message in said, (label, said)
    with PeakSize(neon, main.database) as watched:
        over_http = sql_over_http(
            bounded,
            neon.uri(main),
            {
                "queries": [
                    {"query": "CREATE TABLE filled (g int, pad text)"},
                    {"query": f"INSERT INTO filled {FILLER}"},
                ]
            },
        )
    peaks["/sql"] = watched.peak
    assert over_http.status_code == 400 and over_http.json()["code"] == "53100", over_http.text
    assert message in over_http.json()["message"]
    print(f"\npeak database size per call (limit {SIZE_LIMIT_MB} MB): { {k: round(v / MB) for k, v in peaks.items()} }")
    for label, peak in peaks.items():  # each would have written some 1 GB (the large objects 320 MB)
        assert peak < limit + 64 * MB, (label, peak)
    # The ended statements' new files went with them; what they added to an existing table (the large
    # objects' rows in pg_largeobject) stays until a vacuum, and the branch stays over its limit.
    assert database_size(neon, main.database) < limit + 64 * MB


async def test_a_branch_over_its_limit_still_reads_and_deletes(bounded: HttpServer, neon: Neon, project: Proj) -> None:
    """As on Neon: past the limit a branch refuses to grow, not to be read or cleaned."""
    main = neon.target(project.id)
    with psycopg.connect(neon.cluster.conninfo(main.database.pg_name), autocommit=True) as admin:
        admin.execute(
            "CREATE TABLE bulk AS SELECT g, repeat(md5(g::text), 30) AS pad FROM generate_series(1, 45000) AS g"
        )
        admin.execute(f'ALTER TABLE bulk OWNER TO "{main.project.role_name}"')
    assert database_size(neon, main.database) > SIZE_LIMIT_MB * MB
    async with http_client(bounded) as client:
        counted = ok(await call(client, "run_sql", projectId=project.id, sql="SELECT count(*) FROM bulk"))
        grown = err(await call(client, "run_sql", projectId=project.id, sql=f"INSERT INTO bulk {FILLER}"))
        emptied = ok(await call(client, "run_sql", projectId=project.id, sql="DELETE FROM bulk WHERE g > 100"))
    assert '"count": 45000' in counted
    assert f"project size limit ({SIZE_LIMIT_MB} MB)" in grown
    assert '"rowCount": 44900' in emptied


async def test_no_query_holds_more_memory_than_a_process_may_map(http_server: HttpServer, neon: Neon) -> None:
    """``work_mem`` is any role's to raise; the cap on every PostgreSQL process's address space is not."""
    info = Path(neon.cluster.pgdata or "") / "postmaster.pid"
    postmaster = int(info.read_text().split()[0])
    [cap] = [
        line.split()[3]
        for line in Path(f"/proc/{postmaster}/limits").read_text().splitlines()
        if "address space" in line
    ]
    assert cap != "unlimited", "the cluster was started without the memory cap (by an older localneon?)"
    created = neon.create_project("hostile-memory")
    try:
        async with http_client(http_server) as client:
            said = err(
                await call(
                    client,
                    "run_sql",
                    projectId=created.project.id,
                    sql="SET work_mem = '8GB'; SET temp_buffers = '8GB'; SELECT length(repeat('x', 900000000))",
                )
            )
    finally:
        with contextlib.suppress(Exception):
            neon.delete_project(created.project.id)
    assert "out of memory" in said, said


def test_size_readings_come_sooner_the_faster_a_database_grows() -> None:
    from localneon.engine.bounds import MIN_POLL_S, SIZE_POLL_S, next_interval

    limit = 40 * MB
    # Nothing written since the last reading: the wait doubles, up to SIZE_POLL_S.
    assert next_interval(0.02, (0.0, 7 * MB), (0.02, 7 * MB), limit) == 0.04
    assert next_interval(0.2, (0.0, 7 * MB), (0.2, 7 * MB), limit) == SIZE_POLL_S
    # A first trickle (a table's first page) says nothing of the next second: still only doubling.
    assert next_interval(0.02, (0.0, 7 * MB), (0.02, 7 * MB + 8192), limit) == 0.04
    # 500 MB/s with 30 MB left: half of the 60 ms it needs.
    assert next_interval(0.04, (0.0, 0), (0.02, 10 * MB), limit) == pytest.approx(0.03)
    # At the limit, and past it: as soon as the floor allows.
    assert next_interval(0.04, (0.0, 0), (0.02, limit), limit) == MIN_POLL_S
    assert next_interval(0.04, (0.0, 0), (0.02, limit + MB), limit) == MIN_POLL_S
