"""Fixtures for localneon: one embedded cluster and one HTTP server subprocess per session.

The data directory is ``<repo>/.localneon/test-pgdata`` so tests never touch a user's data. MCP
clients are opened inside each test (``async with``) rather than in async fixtures, so anyio
cancel scopes are entered and left in the same task.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj

REPO = Path(__file__).resolve().parents[2]

TOKEN = "test-" + secrets.token_hex(8)


@pytest.fixture(scope="session")
def neon() -> Neon:
    return Neon.open()


def _spawn_http(tmp: Path, *extra: str) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    ready = tmp / "ready.json"
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "localneon", "--transport", "http", "--port", "0", "--ready-file", str(ready), *extra],
        stdout=subprocess.DEVNULL,
        stderr=log,
        cwd=REPO,
    )
    deadline = time.monotonic() + 90
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"localneon http server did not start: {(tmp / 'server.log').read_text()}")
        time.sleep(0.05)
    return proc, json.loads(ready.read_text())


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory, neon: Neon) -> Iterator[HttpServer]:
    proc, info = _spawn_http(tmp_path_factory.mktemp("http"), "--token", TOKEN)
    try:
        yield HttpServer(info["url"], info["mcp_url"], info["api_url"], TOKEN)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a spawned server: SIGTERM (its lease released), SIGKILL if it does not go within 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def project(neon: Neon) -> Iterator[Proj]:
    """A fresh project with a small ``posts`` table on main; deleted afterwards."""
    import psycopg

    created = neon.create_project("test-project")
    with psycopg.connect(neon.uri(neon.target(created.project.id))) as conn:
        conn.execute("CREATE TABLE posts (id serial PRIMARY KEY, title text NOT NULL, content text)")
        conn.execute("INSERT INTO posts (title, content) SELECT 'title ' || g, 'body' FROM generate_series(1, 50) g")
    try:
        yield Proj(created.project.id, created.branch.id)
    finally:
        if neon.catalog.get_project(created.project.id) is not None:
            neon.delete_project(created.project.id)
