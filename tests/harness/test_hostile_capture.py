"""State capture against what a hostile model leaves behind, on the real local server.

Each test plays the model's part with the project's own role (the credentials `run_sql` uses) and
then captures as the harness does after a trial. Settings the model leaves on its role or database
must not reach the capture; a lock its session holds must not stall it; what does stop it (a closed
database) is the model's fault, never the infrastructure's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import psycopg
import pytest

from harness.recording.records import Snapshot
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.faults import classify
from harness.servers.neon.sandbox import LocalProjectSandbox
from harness.servers.neon.state import capture
from tests.harness.conftest import make_case


@dataclass
class Project:
    project_id: str
    branch_id: str
    database: str
    role: str
    uri: str


@pytest.fixture
async def project(api: NeonAPI) -> AsyncIterator[Project]:
    async with LocalProjectSandbox(api, "hostile-capture").open(make_case(), "capture") as info:
        uri = await api.connection_uri(info.project_id, info.branch_id, info.database, info.role)
        yield Project(info.project_id, info.branch_id, info.database, info.role, uri)


async def as_model(uri: str, *statements: str) -> None:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        for statement in statements:
            await conn.execute(statement.encode())


async def snapshot(api: NeonAPI, project: Project, timeout: float = 30) -> Snapshot:
    return await capture(
        api, project.project_id, project.branch_id, project.database, project.role, timeout=timeout, after_model=True
    )


async def test_settings_and_planted_functions_the_model_leaves_do_not_reach_the_capture(
    api: NeonAPI, project: Project
) -> None:
    clean = await snapshot(api, project)
    await as_model(
        project.uri,
        "ALTER ROLE current_user SET statement_timeout = '1ms'",
        "ALTER ROLE current_user SET default_transaction_read_only = on",
        "ALTER ROLE current_user SET lock_timeout = '1ms'",
        "ALTER ROLE current_user SET DateStyle = 'SQL, DMY'",
        "ALTER ROLE current_user SET TimeZone = 'Pacific/Kiritimati'",
        "ALTER ROLE current_user SET search_path = public, pg_catalog",
        # A model that wants its damage hidden: every row's md5 the same constant.
        "CREATE FUNCTION public.md5(text) RETURNS text LANGUAGE sql AS $$ SELECT 'same'::text $$",
        "DELETE FROM orders",
    )
    sabotaged = await snapshot(api, project)
    assert sabotaged.error is None, sabotaged.error
    assert sabotaged.tables["public.orders"].rows == 0  # the damage shows
    assert {k: v for k, v in sabotaged.tables.items() if k != "public.orders"} == {
        k: v for k, v in clean.tables.items() if k != "public.orders"
    }  # and nothing else moved: the output settings the model chose did not reach the fingerprints
    assert any("default_transaction_read_only=on" in s for s in sabotaged.environment["role_settings"])


async def test_a_lock_held_by_a_sleeping_session_of_the_model_is_ended_before_the_capture(
    api: NeonAPI, project: Project
) -> None:
    held = asyncio.Event()

    async def lock_and_sleep() -> None:
        async with await psycopg.AsyncConnection.connect(project.uri, autocommit=True) as conn:
            await conn.execute("SET statement_timeout = 0")
            await conn.execute("BEGIN")
            await conn.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
            held.set()
            await conn.execute("SELECT pg_sleep(600)")

    model = asyncio.create_task(lock_and_sleep())
    try:
        await asyncio.wait_for(held.wait(), 20)
        captured = await asyncio.wait_for(snapshot(api, project, timeout=30), 60)
        assert captured.error is None, captured.error
        assert "public.orders" in captured.tables
        with pytest.raises(psycopg.OperationalError):  # the model's session was ended, not waited out
            await asyncio.wait_for(model, 20)
    finally:
        model.cancel()


async def test_a_database_the_model_closed_is_its_fault_with_the_reason(api: NeonAPI, project: Project) -> None:
    await as_model(
        project.uri, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I CONNECTION LIMIT 0', current_database()); END $$"
    )
    captured = await snapshot(api, project)
    assert captured.fault == "model", captured.error
    assert captured.error and "connection limit" in captured.error


async def test_failures_outside_the_models_reach_are_the_infrastructures_named_in_words() -> None:
    with pytest.raises(psycopg.OperationalError) as refused:
        await psycopg.AsyncConnection.connect("postgresql://nobody@127.0.0.1:1/none", connect_timeout=2)
    fault, reason = classify(refused.value)
    assert fault == "infrastructure" and "server is down" in reason
    fault, reason = classify(psycopg.errors.DiskFull('could not extend file "base/1/2": No space left on device'))
    assert fault == "infrastructure" and reason.startswith("the database server's disk is full")
    fault, _ = classify(psycopg.errors.InsufficientPrivilege("query would be affected by row-level security policy"))
    assert fault == "model"


async def test_a_table_too_large_for_the_temp_file_limit_is_the_models_fault(api: NeonAPI, project: Project) -> None:
    """The local server bounds a role's temporary files; a table the model made too large to fingerprint
    under that bound is its doing (SQLSTATE 53400 is class 53, "insufficient resources", otherwise)."""
    from localneon.cluster.pg import get_cluster

    await as_model(project.uri, "CREATE TABLE heap AS SELECT g FROM generate_series(1, 300000) AS g")
    async with await psycopg.AsyncConnection.connect(project.uri, autocommit=True) as conn:
        row = await (await conn.execute("SELECT current_user")).fetchone()
    assert row is not None
    with psycopg.connect(get_cluster().admin_conninfo, autocommit=True) as admin:  # the bound, at a small scale
        admin.execute(
            psycopg.sql.SQL("ALTER ROLE {} SET temp_file_limit = '1MB'").format(psycopg.sql.Identifier(row[0]))
        )
    captured = await snapshot(api, project)
    assert captured.fault == "model", captured.error
    assert captured.error and "temp-file limit" in captured.error and "temp_file_limit" in captured.error


def test_what_one_query_may_take_is_the_models_and_what_the_server_lacks_is_not() -> None:
    fault, reason = classify(psycopg.errors.OutOfMemory("out of memory"))
    assert fault == "model" and "memory for one query" in reason
    fault, _ = classify(psycopg.errors.OutOfMemory("out of shared memory"))  # the lock table every session shares
    assert fault == "infrastructure"
    fault, reason = classify(
        psycopg.errors.DiskFull("could not extend file because project size limit (512 MB) has been exceeded")
    )
    assert fault == "model" and "project size limit" in reason
