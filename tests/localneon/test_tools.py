"""Every MCP tool's main path and error path, through a real Streamable HTTP client session."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, ok

# The eight of HEAD's 34 tools the twin gained last (Neon Auth, the Data API, logs, shared projects).
TOOLS_ADDED_FOR_HEAD = {
    "list_shared_projects",
    "provision_neon_auth",
    "configure_neon_auth",
    "get_neon_auth_config",
    "provision_neon_data_api",
    "query_logs",
    "list_log_fields",
    "list_log_field_values",
}
EXPECTED_TOOLS = {
    "list_projects",
    "create_project",
    "describe_project",
    "delete_project",
    "run_sql",
    "run_sql_transaction",
    "describe_table_schema",
    "get_database_tables",
    "create_branch",
    "describe_branch",
    "delete_branch",
    "reset_from_parent",
    "get_connection_string",
    "list_branch_computes",
    "prepare_database_migration",
    "complete_database_migration",
    "explain_sql_statement",
    "prepare_query_tuning",
    "complete_query_tuning",
    "list_slow_queries",
    "compare_database_schema",
    "search",
    "fetch",
    "list_docs_resources",
    "get_doc_resource",
    "list_organizations",
    *TOOLS_ADDED_FOR_HEAD,
}


def main_rows(neon: Neon, project_id: str, query: str, branch: str | None = None) -> list[tuple[Any, ...]]:
    """The query's rows on main, or on the branch of that name."""
    branch_id = named(neon, project_id, branch) if branch else None
    with psycopg.connect(neon.uri(neon.target(project_id, branch_id))) as conn:
        return conn.execute(query).fetchall()


def named(neon: Neon, project_id: str, name: str) -> str:
    """The id of the project's branch of that name (the tools, as Neon's, take ids)."""
    branch = neon.catalog.get_branch_by_name(project_id, name)
    assert branch is not None, name
    return branch.id


def branch_names(neon: Neon, project_id: str) -> list[str]:
    return sorted(b.name for b in neon.catalog.list_branches(project_id))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tool_listing_wrapped(http_server: HttpServer, mode: str) -> None:
    async with http_client(http_server, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == EXPECTED_TOOLS  # Neon's 34 (HEAD of 2026-08-03)
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["required"] == ["params"], tool.name
        assert tool.input_schema["properties"]["params"]["type"] == "object"
        assert tool.annotations is not None
    run_sql = tools["run_sql"].input_schema["properties"]["params"]
    assert set(run_sql["required"]) == {"sql", "projectId"}
    assert {"branchId", "databaseName"} <= set(run_sql["properties"])
    complete = tools["complete_database_migration"].input_schema["properties"]["params"]
    assert set(complete["required"]) == {
        "migrationId",
        "migrationSql",
        "databaseName",
        "projectId",
        "temporaryBranchId",
        "parentBranchId",
    }
    assert tools["list_projects"].annotations and tools["list_projects"].annotations.read_only_hint is True
    assert tools["delete_branch"].annotations and tools["delete_branch"].annotations.destructive_hint is True
    assert "default branch" in (tools["run_sql"].description or "")
    assert "approv" in (tools["complete_database_migration"].description or "")


async def test_run_sql_rows_status_and_errors(http_server: HttpServer, project: Proj) -> None:
    async with http_client(http_server) as client:
        rows = json.loads(
            ok(await call(client, "run_sql", projectId=project.id, sql="SELECT count(*) AS n FROM posts"))
        )
        assert rows == [{"n": 50}]
        status = json.loads(
            ok(await call(client, "run_sql", projectId=project.id, sql="UPDATE posts SET content = 'x' WHERE id < 4"))
        )
        assert status == {"command": "UPDATE 3", "rowCount": 3}
        failure = err(await call(client, "run_sql", projectId=project.id, sql="SELECT * FROM missing_table"))
        assert 'relation "missing_table" does not exist' in failure
        assert project.main in failure and project.id in failure
        wrong_shape = err(await client.call_tool("run_sql", {"projectId": project.id, "sql": "SELECT 1"}))
        assert "params" in wrong_shape


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("run_sql", {"sql": "SELECT 1"}),
        ("describe_project", {}),
        ("get_database_tables", {}),
        ("create_branch", {}),
        ("delete_project", {}),
        ("list_slow_queries", {}),
        ("prepare_database_migration", {"migrationSql": "CREATE TABLE x (id int)"}),
    ],
)
async def test_unknown_project_is_a_clear_error(http_server: HttpServer, tool: str, params: dict[str, Any]) -> None:
    async with http_client(http_server) as client:
        message = err(await call(client, tool, projectId="no-such-project-1", **params))
    assert "no-such-project-1" in message and "not found" in message


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("run_sql", {"sql": "SELECT 1", "branchId": "br-missing-branch-00000000"}),
        ("describe_branch", {"branchId": "br-missing-branch-00000000"}),
        ("create_branch", {"parentId": "br-missing-branch-00000000"}),
        ("reset_from_parent", {"branchIdOrName": "br-missing-branch-00000000"}),
        ("get_connection_string", {"branchId": "br-missing-branch-00000000"}),
    ],
)
async def test_unknown_branch_is_refused_in_neons_words(
    http_server: HttpServer, project: Proj, tool: str, params: dict[str, Any]
) -> None:
    """Neon's API's 404 and the line Neon's server adds under it; reset_from_parent looks the id up
    itself at Neon and names it (delete_branch: tests/localneon/test_branch_ids.py)."""
    async with http_client(http_server) as client:
        message = err(await call(client, tool, projectId=project.id, **params))
    if tool == "reset_from_parent":
        assert message == f'reset_from_parent: Branch ID "br-missing-branch-00000000" not found in project {project.id}'
    else:
        assert message == "branch not found\n[HTTP 404] branch not found"


async def test_run_sql_transaction_is_atomic(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        results = json.loads(
            ok(
                await call(
                    client,
                    "run_sql_transaction",
                    projectId=project.id,
                    sqlStatements=["INSERT INTO posts (title) VALUES ('a')", "SELECT count(*) AS n FROM posts"],
                )
            )
        )
        assert results[1] == [{"n": 51}]
        message = err(
            await call(
                client,
                "run_sql_transaction",
                projectId=project.id,
                sqlStatements=["INSERT INTO posts (title) VALUES ('b')", "INSERT INTO posts (title) VALUES (NULL)"],
            )
        )
    assert "null value" in message
    assert main_rows(neon, project.id, "SELECT count(*) FROM posts") == [(51,)]


async def test_tables_and_table_schema(http_server: HttpServer, project: Proj) -> None:
    async with http_client(http_server) as client:
        tables = json.loads(ok(await call(client, "get_database_tables", projectId=project.id)))
        assert [t["table_name"] for t in tables["tables"]] == ["posts"]
        schema = json.loads(ok(await call(client, "describe_table_schema", projectId=project.id, tableName="posts")))
        assert [c["name"] for c in schema["columns"]] == ["id", "title", "content"]
        assert any("PRIMARY KEY" in c["definition"] for c in schema["constraints"])
        message = err(await call(client, "describe_table_schema", projectId=project.id, tableName="nope"))
        assert "nope" in message and "does not exist" in message


async def test_branch_isolation_and_lifecycle(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        ok(await call(client, "create_branch", projectId=project.id, branchName="dev"))
        dup = err(await call(client, "create_branch", projectId=project.id, branchName="dev"))
        assert "already exists" in dup
        dev = named(neon, project.id, "dev")
        ok(await call(client, "run_sql", projectId=project.id, branchId=dev, sql="DELETE FROM posts"))
        ok(await call(client, "run_sql", projectId=project.id, branchId=dev, sql="CREATE TABLE only_dev (x int)"))
        assert main_rows(neon, project.id, "SELECT count(*) FROM posts") == [(50,)]
        assert main_rows(neon, project.id, "SELECT to_regclass('only_dev') IS NULL") == [(True,)]
        info = json.loads(ok(await call(client, "describe_branch", projectId=project.id, branchId=dev)))
        assert info["parent_id"] == project.main and "only_dev" in [t["table_name"] for t in info["tables"]]
        diff = ok(
            await call(client, "compare_database_schema", projectId=project.id, branchId=dev, databaseName="neondb")
        )
        assert "+CREATE TABLE public.only_dev" in diff
        computes = json.loads(ok(await call(client, "list_branch_computes", projectId=project.id)))
        assert len(computes["computes"]) == 2
        main_delete = err(await call(client, "delete_branch", projectId=project.id, branchId=project.main))
        assert "default branch" in main_delete
        ok(await call(client, "delete_branch", projectId=project.id, branchId=dev))
    assert branch_names(neon, project.id) == ["main"]


async def test_reset_from_parent(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        ok(await call(client, "create_branch", projectId=project.id, branchName="dev"))
        dev = neon.branch(project.id, named(neon, project.id, "dev"))
        ok(await call(client, "run_sql", projectId=project.id, branchId=dev.id, sql="DELETE FROM posts"))
        ok(
            await call(
                client, "reset_from_parent", projectId=project.id, branchIdOrName="dev", preserveUnderName="dev-old"
            )
        )
        assert main_rows(neon, project.id, "SELECT count(*) FROM posts", "dev") == [(50,)]
        assert main_rows(neon, project.id, "SELECT count(*) FROM posts", "dev-old") == [(0,)]
        assert named(neon, project.id, "dev") == dev.id
        no_parent = err(await call(client, "reset_from_parent", projectId=project.id, branchIdOrName="main"))
        assert "no parent" in no_parent


async def test_connection_string_is_usable_and_confined(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    other = neon.create_project("other")
    try:
        async with http_client(http_server) as client:
            info = json.loads(ok(await call(client, "get_connection_string", projectId=project.id)))
            bad_role = err(await call(client, "get_connection_string", projectId=project.id, roleName="postgres"))
            alias = info["role"].rsplit("_", 1)[0]
            same = json.loads(ok(await call(client, "get_connection_string", projectId=project.id, roleName=alias)))
        assert "postgres" in bad_role and alias == "neondb_owner"
        assert same["uri"] == info["uri"]
        with psycopg.connect(info["uri"]) as conn:
            assert conn.execute("SELECT count(*) FROM posts").fetchone() == (50,)
        foreign_db = neon.target(other.project.id).database.pg_name
        foreign = neon.cluster.conninfo(foreign_db, user=info["role"], password=neon.project(project.id).role_password)
        with pytest.raises(psycopg.OperationalError, match="permission denied"):
            psycopg.connect(foreign).close()
    finally:
        neon.delete_project(other.project.id)


def _field(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(f"- {name}: "):
            return line.split(": ", 1)[1].strip()
    raise AssertionError(f"{name} not in {text}")


MIGRATION = (
    "ALTER TABLE posts ADD COLUMN views integer NOT NULL DEFAULT 0; CREATE TABLE audit (n int); "
    "INSERT INTO audit VALUES (1);"
)


async def _prepare(client: Any, project: Proj) -> dict[str, str]:
    body = ok(await call(client, "prepare_database_migration", projectId=project.id, migrationSql=MIGRATION))
    assert "complete_database_migration" in body
    return {
        key: _field(body, key)
        for key in ("migrationId", "projectId", "databaseName", "parentBranchId", "temporaryBranchId")
    }


async def test_migration_prepare_then_complete_applies_once(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        values = await _prepare(client, project)
        assert values["parentBranchId"] == project.main
        temp = neon.branch(project.id, values["temporaryBranchId"])
        assert temp.name.startswith("mcp-migration-")
        check = ok(
            await call(client, "run_sql", projectId=project.id, branchId=temp.id, sql="SELECT count(*) AS n FROM audit")
        )
        assert json.loads(check) == [{"n": 1}]
        assert main_rows(neon, project.id, "SELECT to_regclass('audit') IS NULL") == [(True,)]
        done = ok(await call(client, "complete_database_migration", migrationSql=MIGRATION, **values))
        assert "Applied" in done and "Deleted temporary branch" in done
        again = err(await call(client, "complete_database_migration", migrationSql=MIGRATION, **values))
        assert "unknown temporary branch" in again
    assert main_rows(neon, project.id, "SELECT count(*) FROM audit") == [(1,)]
    assert main_rows(neon, project.id, "SELECT min(views) FROM posts") == [(0,)]
    assert branch_names(neon, project.id) == ["main"]


async def test_migration_with_bad_sql_leaves_nothing(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        message = err(
            await call(
                client,
                "prepare_database_migration",
                projectId=project.id,
                migrationSql="CREATE TABLE fine (id int); ALTER TABLE no_such_table ADD COLUMN x int;",
            )
        )
    assert 'relation "no_such_table" does not exist' in message
    assert branch_names(neon, project.id) == ["main"]
    assert main_rows(neon, project.id, "SELECT to_regclass('fine') IS NULL") == [(True,)]


async def test_migration_cancel_leaves_main_untouched(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        values = await _prepare(client, project)
        done = ok(
            await call(client, "complete_database_migration", migrationSql=MIGRATION, applyChanges=False, **values)
        )
    assert "Cancelled" in done
    assert main_rows(neon, project.id, "SELECT to_regclass('audit') IS NULL") == [(True,)]
    assert branch_names(neon, project.id) == ["main"]


async def test_complete_rejects_wrong_branches(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        values = await _prepare(client, project)
        unknown = {**values, "temporaryBranchId": "br-never-existed-12345678"}
        message = err(await call(client, "complete_database_migration", migrationSql=MIGRATION, **unknown))
        assert "unknown temporary branch" in message
        mismatch = {**values, "parentBranchId": "br-some-other-00000000"}
        message = err(await call(client, "complete_database_migration", migrationSql=MIGRATION, **mismatch))
        assert "parent mismatch" in message
        ok(await call(client, "create_branch", projectId=project.id, branchName="feature"))
        feature = named(neon, project.id, "feature")
        not_temp = {**values, "temporaryBranchId": feature}
        message = err(await call(client, "complete_database_migration", migrationSql=MIGRATION, **not_temp))
        assert "not a migration branch" in message
    assert main_rows(neon, project.id, "SELECT to_regclass('audit') IS NULL") == [(True,)]
    assert neon.catalog.get_branch(project.id, values["temporaryBranchId"]) is not None


async def test_explain_analyze_has_no_side_effects(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    async with http_client(http_server) as client:
        plan = json.loads(
            ok(await call(client, "explain_sql_statement", projectId=project.id, sql="DELETE FROM posts"))
        )
        assert plan["plan"][0]["Plan"]["Node Type"] == "ModifyTable"
        assert "Actual Rows" in json.dumps(plan)
        message = err(await call(client, "explain_sql_statement", projectId=project.id, sql="SELEC 1"))
        assert "syntax error" in message
    assert main_rows(neon, project.id, "SELECT count(*) FROM posts") == [(50,)]


async def test_query_tuning_round_trip(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    query = "SELECT * FROM posts WHERE title = 'title 7'"
    async with http_client(http_server) as client:
        body = ok(await call(client, "prepare_query_tuning", projectId=project.id, databaseName="neondb", sql=query))
        tuning_id = body.split("tuningId: ")[1].split()[0]
        temp_id = body.split("temporaryBranchId: ")[1].split()[0]
        assert "Seq Scan" in body and '"table": "posts"' in body
        # The model tries the index on the temporary branch itself, as Neon's prepare output tells it;
        # complete then applies it to main once (it does not run it on the temporary branch again).
        tried = "CREATE INDEX posts_title_idx ON posts (title)"
        ok(await call(client, "run_sql", projectId=project.id, branchId=temp_id, sql=tried))
        done = ok(
            await call(
                client,
                "complete_query_tuning",
                projectId=project.id,
                databaseName="neondb",
                tuningId=tuning_id,
                temporaryBranchId=temp_id,
                suggestedSqlStatements=["CREATE INDEX posts_title_idx ON posts (title)", "ANALYZE posts"],
                applyChanges=True,
            )
        )
        assert "Applied 2 statement(s)" in done
        again = err(
            await call(
                client,
                "complete_query_tuning",
                projectId=project.id,
                databaseName="neondb",
                tuningId=tuning_id,
                temporaryBranchId=temp_id,
                suggestedSqlStatements=["SELECT 1"],
            )
        )
        assert "no longer exists" in again
    assert main_rows(neon, project.id, "SELECT to_regclass('posts_title_idx') IS NOT NULL") == [(True,)]
    assert branch_names(neon, project.id) == ["main"]


async def test_list_slow_queries_reads_pg_stat_statements(http_server: HttpServer, project: Proj) -> None:
    async with http_client(http_server) as client:
        for _ in range(2):
            ok(await call(client, "run_sql", projectId=project.id, sql="SELECT pg_sleep(0.03) AS slow_marker"))
        found = json.loads(ok(await call(client, "list_slow_queries", projectId=project.id, minExecutionTime=20)))
        assert any("slow_marker" in q["query"] and q["calls"] >= 2 for q in found["slow_queries"])
        none = json.loads(ok(await call(client, "list_slow_queries", projectId=project.id, minExecutionTime=60_000)))
        assert none["slow_queries"] == []
        message = err(await call(client, "list_slow_queries", projectId=project.id, computeId="ep-not-mine"))
        assert "ep-not-mine" in message


async def test_projects_organizations_search_fetch_docs(http_server: HttpServer, neon: Neon) -> None:
    async with http_client(http_server) as client:
        created = ok(await call(client, "create_project", name="searchable-zebra"))
        project_id = created.split()[2]
        try:
            listed = json.loads(ok(await call(client, "list_projects", search="searchable-zebra")))
            assert [p["id"] for p in listed["projects"]] == [project_id]
            described = json.loads(ok(await call(client, "describe_project", projectId=project_id)))
            assert described["branches"][0]["default"] is True
            orgs = json.loads(ok(await call(client, "list_organizations")))
            assert len(orgs["organizations"]) == 1
            hits = json.loads(ok(await call(client, "search", query="zebra")))["results"]
            assert {"id": project_id, "type": "project", "title": "searchable-zebra"} in hits
            fetched = json.loads(ok(await call(client, "fetch", id=project_id)))
            assert fetched["branches"][0]["name"] == "main"
            branch_hit = json.loads(ok(await call(client, "fetch", id=fetched["branches"][0]["id"])))
            assert branch_hit["project_id"] == project_id
            docs = json.loads(ok(await call(client, "list_docs_resources")))["docs"]
            assert "migrations" in [d["slug"] for d in docs]
            page = ok(await call(client, "get_doc_resource", slug="migrations"))
            assert page.startswith("# ")
            doc_hits = json.loads(ok(await call(client, "search", query="temporary branch")))["results"]
            assert any(h["id"] == "doc:migrations" for h in doc_hits)
            assert "no doc page" in err(await call(client, "get_doc_resource", slug="nope"))
            assert "nothing found" in err(await call(client, "fetch", id="nothing-here-1"))
        finally:
            ok(await call(client, "delete_project", projectId=project_id))
        assert neon.catalog.get_project(project_id) is None


async def test_expired_branches_are_swept(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    from datetime import UTC, datetime, timedelta

    def stamp(delta: timedelta) -> str:
        return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")

    async with http_client(http_server) as client:
        body = ok(
            await call(
                client,
                "create_branch",
                projectId=project.id,
                branchName="short-lived",
                expiresAt=stamp(timedelta(minutes=10)),
            )
        )
        assert "Expires at" in body
        ok(
            await call(
                client,
                "create_branch",
                projectId=project.id,
                branchName="long-lived",
                expiresAt=stamp(timedelta(hours=1)),
            )
        )
        assert "RFC 3339" in err(await call(client, "create_branch", projectId=project.id, expiresAt="tomorrow"))
    soon = datetime.now(UTC) + timedelta(minutes=20)  # the sweep is handed its "now": no waiting on the clock
    assert neon.delete_expired_branches(now=datetime.now(UTC)) == []
    assert branch_names(neon, project.id) == ["long-lived", "main", "short-lived"]
    assert len(neon.delete_expired_branches(now=soon)) == 1
    assert branch_names(neon, project.id) == ["long-lived", "main"]
