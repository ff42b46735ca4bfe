"""`DATABASE_URL` points localneon at an existing PostgreSQL: nothing embedded is started or created."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import StdioServerParameters
from mcp.client import Client

from localneon.cluster.pg import get_cluster
from localneon.engine.branching import Neon
from tests.localneon.helpers import REPO, call, ok


async def test_an_existing_server_is_used_as_is(tmp_path: Path, neon: Neon) -> None:
    unused_pgdata = tmp_path / "must-stay-absent"
    env = {**os.environ, "DATABASE_URL": get_cluster().admin_conninfo, "LOCALNEON_PGDATA": str(unused_pgdata)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "localneon", "--transport", "stdio"], env=env, cwd=str(REPO)
    )
    async with Client(params, mode="legacy") as client:
        created = ok(await call(client, "create_project", name="via-database-url"))
        project_id = created.split()[2]
        try:
            # The project lives in the existing cluster's catalog: another process on it sees it.
            assert neon.catalog.get_project(project_id) is not None
            assert "via-database-url" in ok(await call(client, "list_projects", search="via-database-url"))
        finally:
            ok(await call(client, "delete_project", projectId=project_id))
    assert not unused_pgdata.exists(), "DATABASE_URL mode must not initialise an embedded cluster"
