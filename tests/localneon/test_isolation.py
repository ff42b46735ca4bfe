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
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, ok, text

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
        for name in ("main", "other-child"):
            found = neon.catalog.get_branch_by_name(other.project.id, name)
            assert found is not None
            sql = "SELECT datname FROM pg_database"
            rows = json.loads(
                text(await call(client, "run_sql", projectId=other.project.id, branchId=found.id, sql=sql))
            )
            assert [r["datname"] for r in rows] == [neon.target(other.project.id, found.id).database.pg_name]


# Every catalog, view and function route to another project's role we know of: listings, session
# and lock statistics, memberships, ACLs, dependencies, comments, settings, progress reports.
ROLE_ROUTES = (
    "SELECT rolname FROM pg_roles",
    "SELECT rolname FROM pg_catalog.pg_roles",
    "SELECT rolname, rolpassword FROM pg_catalog.pg_authid",
    "SELECT usename FROM pg_user",
    "SELECT refobjid::regrole::text FROM pg_shdepend",
    "SELECT refobjid::regrole::text FROM pg_catalog.pg_shdepend",
    "SELECT usename, usesysid::regrole::text FROM pg_stat_activity",
    "SELECT usename FROM pg_catalog.pg_stat_activity",
    "SELECT usesysid::regrole::text FROM pg_catalog.pg_stat_get_activity(NULL)",
    "SELECT pg_catalog.pg_stat_get_backend_userid(b)::regrole::text FROM pg_catalog.pg_stat_get_backend_idset() AS b",
    "SELECT l.locktype, l.database, a.usename FROM pg_locks AS l LEFT JOIN pg_stat_activity AS a USING (pid)",
    "SELECT member::regrole::text, roleid::regrole::text FROM pg_auth_members",
    "SELECT member::regrole::text FROM pg_catalog.pg_auth_members",
    "SELECT groname, (SELECT array_agg(m::regrole::text) FROM unnest(grolist) AS m) FROM pg_group",
    "SELECT datname, datacl::text, datdba::regrole::text FROM pg_database",
    "SELECT datname, datacl::text FROM pg_catalog.pg_database",
    "SELECT setrole::regrole::text, setconfig FROM pg_db_role_setting",
    "SELECT description FROM pg_shdescription",
    "SELECT datname FROM pg_stat_database_conflicts",
    "SELECT datname FROM pg_stat_progress_vacuum",
    "SELECT usename FROM pg_stat_ssl JOIN pg_stat_activity USING (pid)",
    "SELECT owner FROM pg_prepared_xacts",
    "SELECT grantee, role_name FROM information_schema.applicable_roles",
    "SELECT role_name FROM information_schema.enabled_roles",
    "SELECT grantee FROM information_schema.table_privileges",
    "SELECT query FROM pg_stat_statements",
)


@pytest.fixture
def busy_other(neon: Neon, other: Other) -> Iterator[Other]:
    """The other project at work while a model looks: its role and its read-only companion each hold
    a session (one with a lock), and it granted a privilege, so activity, locks and dependencies
    all name it somewhere."""
    target = neon.target(other.project.id)
    companion = psycopg.connect(neon.readonly_conninfo(target), autocommit=True)
    owner = psycopg.connect(neon.uri(target), autocommit=True)
    try:
        owner.execute("GRANT SELECT ON other_secrets TO PUBLIC")
        owner.execute("BEGIN")
        owner.execute("LOCK TABLE other_secrets IN ACCESS SHARE MODE")
        companion.execute("SELECT 1")
        row = companion.execute("SELECT current_user").fetchone()
        assert row is not None
        yield dataclasses.replace(other, names=other.names | {str(row[0])})
    finally:
        owner.close()
        companion.close()


async def test_no_route_names_another_projects_role(
    http_server: HttpServer, neon: Neon, project: Proj, busy_other: Other
) -> None:
    """As the project's role (``run_sql``), as its read-only companion (a read-only grant) and over
    ``/sql``: each route answers with this project's own, or refuses; none names the other."""
    import httpx

    said: dict[str, str] = {}
    read_only = dataclasses.replace(http_server, mcp_url=f"{http_server.mcp_url}?readonly=true")
    for label, server in (("role", http_server), ("read-only", read_only)):
        async with http_client(server) as client:
            for route in ROLE_ROUTES:
                said[f"{label}: {route}"] = text(await call(client, "run_sql", projectId=project.id, sql=route))
    headers = {"Neon-Connection-String": neon.uri(neon.target(project.id))}
    with httpx.Client(timeout=60) as http:
        for route in ROLE_ROUTES:
            said[f"/sql: {route}"] = http.post(f"{http_server.url}/sql", json={"query": route}, headers=headers).text
    leaks = {label: sorted(n for n in busy_other.names if n in body) for label, body in said.items()}
    assert {label: found for label, found in leaks.items() if found} == {}
    # The routes answer (or refuse), rather than failing on something else: the filtered ones list this project.
    own_role = neon.project(project.id).role_name
    assert own_role in said["role: SELECT refobjid::regrole::text FROM pg_shdepend"]
    assert own_role in said["role: SELECT usename, usesysid::regrole::text FROM pg_stat_activity"]
    assert (
        "permission denied" in said["role: SELECT usesysid::regrole::text FROM pg_catalog.pg_stat_get_activity(NULL)"]
    )
    assert "permission denied" in said["read-only: SELECT rolname, rolpassword FROM pg_catalog.pg_authid"]


async def test_a_role_found_by_its_oid_names_no_project(
    http_server: HttpServer, neon: Neon, project: Proj, busy_other: Other
) -> None:
    """What stays open: PostgreSQL names any role by its oid, to anyone (no privilege governs a
    type's output). Counting through oids lists the cluster's role names, so none may carry a
    project: not its id, branch or databases, and no name made from its id exists."""
    other_id = busy_other.project.id
    with psycopg.connect(neon.cluster.admin_conninfo) as admin:
        row = admin.execute("SELECT max(oid)::int FROM pg_roles").fetchone()
    assert row is not None
    enumerate_roles = (
        f"SELECT g::oid::regrole::text AS name FROM generate_series(16384, {row[0]}) AS g "
        "WHERE g::oid::regrole::text !~ '^[0-9]+$'"
    )
    probe = f"SELECT to_regrole('ln_ro_{other_id}') IS NULL AS gone, to_regrole('{other_id}') IS NULL AS none"
    async with http_client(http_server) as client:
        names = [
            row["name"]
            for row in json.loads(ok(await call(client, "run_sql", projectId=project.id, sql=enumerate_roles)))
        ]
        probed = json.loads(ok(await call(client, "run_sql", projectId=project.id, sql=probe)))
    other_role = neon.project(other_id).role_name
    assert other_role in names  # the residual, documented in docs/localneon.md
    identifying = busy_other.names - {other_role} - {n.strip('"') for n in names}
    assert [n for n in names if any(part in n for part in identifying)] == []
    assert probed == [{"gone": True, "none": True}]


def test_sql_errors_do_not_tell_which_databases_exist(
    http_server: HttpServer, neon: Neon, project: Proj, other: Other
) -> None:
    """``POST /sql`` with this project's role and another project's database gets the answer a name
    that no project has gets, with the right password and with a wrong one."""
    import httpx

    from localneon.cluster.pg import build_uri

    mine = neon.target(project.id)
    theirs = neon.target(other.project.id).database.pg_name
    missing = "ln_" + "x" * (len(theirs) - len("ln__neondb")) + "_neondb"  # the same shape, held by nobody
    assert len(missing) == len(theirs) and missing != theirs

    def answer(dbname: str, password: str) -> tuple[int, Any]:
        uri = build_uri(neon.uri(mine), dbname=dbname, user=mine.project.role_name, password=password)
        with httpx.Client(timeout=60) as http:
            got = http.post(
                f"{http_server.url}/sql", json={"query": "SELECT 1"}, headers={"Neon-Connection-String": uri}
            )
        return got.status_code, json.loads(got.text.replace(dbname, "<database>"))

    for password in (mine.project.role_password, "npg_not-the-password"):
        assert answer(theirs, password) == answer(missing, password), password
    status, body = answer(theirs, mine.project.role_password)
    assert status == 400 and body["message"] == 'database "<database>" does not exist' and body["code"] == "3D000"
    status, body = answer(missing, "npg_not-the-password")
    assert status == 400 and body["message"] == f"password authentication failed for user '{mine.project.role_name}'"
