"""The embedded cluster's TCP listener: a free port per cluster, remembered with its data directory,
passwords required over TCP, the unix socket kept for administration."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import psycopg
import pytest

from localneon.cluster.pg import PORT_FILE, TCP_HOST, start_embedded, stop_embedded
from localneon.engine.branching import Neon
from tests.pgdirs import cluster_dir


@pytest.fixture
def own_pgdata(request: pytest.FixtureRequest) -> Path:
    """A cluster folder of this test's own: stopped, then removed, when the test ends."""
    pgdata = cluster_dir("tcp-test-pgdata")

    def remove() -> None:
        stop_embedded(pgdata)
        shutil.rmtree(pgdata, ignore_errors=True)

    remove()
    request.addfinalizer(remove)
    return pgdata


def test_port_is_remembered_then_replaced_when_taken(own_pgdata: Path, neon: Neon) -> None:
    first = start_embedded(own_pgdata)
    assert first.tcp_port is not None and first.public_host == TCP_HOST
    assert (own_pgdata / PORT_FILE).read_text().strip() == str(first.tcp_port)
    assert first.tcp_port != neon.cluster.tcp_port  # two clusters side by side, each its own port

    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(f"postgresql://postgres@{TCP_HOST}:{first.tcp_port}/postgres", connect_timeout=10)
    with psycopg.connect(first.admin_conninfo, autocommit=True) as admin:  # the socket, as before
        admin.execute("CREATE ROLE tcp_probe LOGIN PASSWORD 'probe-pw'")
    with psycopg.connect(first.uri("postgres", "tcp_probe", "probe-pw"), connect_timeout=10) as conn:
        assert conn.execute("SELECT inet_server_port()").fetchone() == (first.tcp_port,)

    stop_embedded(own_pgdata)
    again = start_embedded(own_pgdata)
    assert again.tcp_port == first.tcp_port

    stop_embedded(own_pgdata)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        # As PostgreSQL binds: the stopped server's connections may still hold the port in TIME_WAIT.
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind((TCP_HOST, first.tcp_port))
        squatter.listen()
        moved = start_embedded(own_pgdata)
    assert moved.tcp_port not in (None, first.tcp_port)
    assert (own_pgdata / PORT_FILE).read_text().strip() == str(moved.tcp_port)
