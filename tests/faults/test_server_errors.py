"""The real server error behind an HTTP 500 reaches the caller (and so the record and the console)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from harness.mcp.server_process import LocalServer
from harness.servers.neon.api import NeonAPI, NeonAPIError
from tests.faults.conftest import FAULTS_PGDATA, admin_rows

TOKEN = "fault-token-" + secrets.token_hex(4)


@pytest.fixture
async def api() -> AsyncIterator[NeonAPI]:
    server = LocalServer(token=TOKEN, env={"LOCALNEON_PGDATA": str(FAULTS_PGDATA)})
    endpoints = await server.start()
    client = NeonAPI(endpoints.api_url, TOKEN, operation_poll=0.05)
    yield client
    await client.aclose()
    server.stop()


async def test_an_internal_error_carries_postgresqls_message(api: NeonAPI) -> None:
    body = await api.create_project(f"eval-fault500-{secrets.token_hex(3)}")
    project_id, branch_id = body["project"]["id"], body["branch"]["id"]
    try:
        # Break the branch behind the server's back: its database disappears from PostgreSQL.
        (physical,) = admin_rows(
            "SELECT pg_name FROM databases WHERE branch_id = %s", branch_id, dbname="localneon_catalog"
        )
        admin_rows(f'DROP DATABASE "{physical}" WITH (FORCE)')
        with pytest.raises(NeonAPIError) as raised:
            await api.create_branch(project_id, parent_id=branch_id, name="child")
        assert raised.value.status == 500
        assert f'database "{physical}" does not exist' in str(raised.value)
        assert "Internal Server Error" not in str(raised.value)
    finally:
        await api.delete_project(project_id)
