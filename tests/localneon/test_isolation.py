"""Two projects on one cluster: nothing a session pinned to one project sees names the other's
databases, roles, branches or project id, including what Neon's own describe_branch SQL reads."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import psycopg
import pytest
from mcp.client import Client

from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, text

# What Neon's describe_branch creates and runs on the branch (mcp/tools/utils.ts at HEAD): every
# non-template database of the cluster, then the current database's objects.
NEON_DB_TREE = """
CREATE OR REPLACE FUNCTION public.show_db_tree() RETURNS TABLE (tree_structure text) AS $$
BEGIN
    RETURN QUERY SELECT ':file_folder: ' || datname || ' (DATABASE)' FROM pg_database WHERE datistemplate = false;
    RETURN QUERY SELECT n.nspname::text FROM pg_namespace n
        WHERE n.nspname NOT LIKE 'pg_%' AND n.nspname != 'information_schema';
END;
$$ LANGUAGE plpgsql
"""
PEEKS = (
    "SELECT datname FROM pg_database",
    "SELECT rolname FROM pg_roles",
    "SELECT usename FROM pg_user",
    "SELECT datname, usename FROM pg_stat_activity",
    "SELECT datname FROM pg_stat_database",
    "SELECT query FROM pg_stat_statements",
)


@dataclasses.dataclass(frozen=True)
class Other:
    project: Proj
    names: frozenset[str]  # everything that identifies it: project, branch, databases, role


@pytest.fixture
def other(neon: Neon) -> Iterator[Other]:
    created = neon.create_project("isolation-other")
    pid = created.project.id
    with psycopg.connect(neon.uri(neon.target(pid))) as conn:
        conn.execute("CREATE TABLE other_secrets (v text)")
        conn.execute("SELECT count(*) FROM other_secrets")
    child = neon.create_branch(pid, name="other-child").branch
    names = {pid, created.branch.id, child.id, created.project.role_name}
    names |= {d.pg_name for d in neon.catalog.project_databases(pid)}
    try:
        yield Other(Proj(pid, created.branch.id), frozenset(names))
    finally:
        neon.delete_project(pid)


async def outputs(client: Client, project: Proj) -> dict[str, str]:
    """Every read a pinned session can make, and SQL peeking at the cluster-wide catalogs."""
    said: dict[str, str] = {}

    async def record(label: str, tool: str, **args: Any) -> None:
        said[label] = text(await call(client, tool, **args))

    for tool in (
        "describe_project",
        "get_database_tables",
        "list_branch_computes",
        "get_connection_string",
        "list_slow_queries",
        "list_log_fields",
        "get_neon_auth_config",
    ):
        await record(tool, tool)
    await record("describe_branch", "describe_branch", branchId=project.main)
    await record("describe_table_schema", "describe_table_schema", tableName="posts")
    await record("explain", "explain_sql_statement", sql="SELECT * FROM posts")
    await record("db_tree", "run_sql_transaction", sqlStatements=[NEON_DB_TREE, "SELECT * FROM public.show_db_tree()"])
    for peek in PEEKS:
        await record(peek, "run_sql", sql=peek)
    return said


async def test_a_pinned_session_never_names_another_project(
    http_server: HttpServer, project: Proj, other: Other, neon: Neon
) -> None:
    pinned = dataclasses.replace(http_server, mcp_url=f"{http_server.mcp_url}?{urlencode({'projectId': project.id})}")
    async with http_client(pinned) as client:
        said = await outputs(client, project)
        qualified = await call(client, "run_sql", sql="SELECT datname FROM pg_catalog.pg_database")
        roles = await call(client, "run_sql", sql="SELECT rolname FROM pg_catalog.pg_roles")
    said |= {"qualified pg_database": text(qualified), "qualified pg_roles": text(roles)}
    leaks = {label: sorted(n for n in other.names if n in body) for label, body in said.items()}
    assert {label: found for label, found in leaks.items() if found} == {}
    assert "permission denied" in err(qualified) and "permission denied" in err(roles)
    own = neon.target(project.id).database.pg_name
    listed = [row["datname"] for row in json.loads(said["SELECT datname FROM pg_database"])]
    assert listed == [own]  # the branch database itself, as a Neon branch's own server lists it
    tree = said["db_tree"]
    assert f"{own} (DATABASE)" in tree and "postgres (DATABASE)" not in tree
    assert [r["rolname"] for r in json.loads(said["SELECT rolname FROM pg_roles"])].count(
        neon.project(project.id).role_name
    ) == 1


async def test_the_other_project_still_sees_its_own(http_server: HttpServer, other: Other, neon: Neon) -> None:
    """The filter follows the connection, not a blanket hide: each branch lists its own database."""
    async with http_client(http_server) as client:
        for branch in ("main", "other-child"):
            sql = "SELECT datname FROM pg_database"
            rows = json.loads(text(await call(client, "run_sql", projectId=other.project.id, branchId=branch, sql=sql)))
            assert [r["datname"] for r in rows] == [neon.target(other.project.id, branch).database.pg_name]
