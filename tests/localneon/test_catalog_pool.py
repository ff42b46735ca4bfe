"""The catalog reuses a few connections, rolls back a failed unit of work, and survives a killed one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from localneon.engine.branching import Neon
from localneon.engine.catalog import Catalog


def backend_pid(catalog: Catalog) -> int:
    with catalog.connect() as conn:
        row = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert row is not None
        return int(row["pid"])


def test_reads_reuse_a_few_connections_even_from_many_threads(neon: Neon) -> None:
    catalog = Catalog(neon.cluster)
    try:
        one_at_a_time = {backend_pid(catalog) for _ in range(30)}
        assert len(one_at_a_time) == 1  # a fresh connection per read would give 30
        with ThreadPoolExecutor(8) as pool:
            concurrent = set(pool.map(lambda _: backend_pid(catalog), range(200)))
        assert len(concurrent) <= 8 + Catalog.IDLE_CONNECTIONS  # bounded by the callers at once
    finally:
        catalog.close()


def test_a_failed_unit_of_work_is_rolled_back_and_the_connection_stays_usable(neon: Neon) -> None:
    catalog = Catalog(neon.cluster)
    try:
        with pytest.raises(psycopg.errors.UndefinedTable), catalog.connect() as conn:
            conn.execute("CREATE TEMP TABLE scratch (x int)")
            conn.execute("INSERT INTO scratch VALUES (1)")
            conn.execute("SELECT * FROM no_such_table")
        with catalog.connect() as conn:  # the same connection, back to a clean state
            assert conn.execute("SELECT to_regclass('pg_temp.scratch') AS t").fetchone() == {"t": None}
    finally:
        catalog.close()


def test_a_connection_ended_by_the_server_is_replaced_without_an_error(neon: Neon) -> None:
    catalog = Catalog(neon.cluster)
    try:
        pid = backend_pid(catalog)
        with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        assert catalog.get_project("no-such-project") is None  # no error reaches the caller
        assert backend_pid(catalog) != pid
    finally:
        catalog.close()
