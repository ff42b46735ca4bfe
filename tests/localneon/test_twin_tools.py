"""The eight tools of Neon's 34 that localneon added (shared projects, Neon Auth, Data API, logs),
over real Streamable HTTP sessions; Neon Auth's REST routes over HTTP; pg_stat_statements as
Neon's own list_slow_queries reads it."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psycopg
from jsonschema import Draft202012Validator

from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, ok
from tests.localneon.test_tools import TOOLS_ADDED_FOR_HEAD

REFERENCE = json.loads((Path(__file__).resolve().parents[2] / "localneon/reference/neon-grants.json").read_text())
NEON_AUTH_SCHEMAS = json.loads((Path(__file__).resolve().parent / "data/neon-auth-schemas.json").read_text())
NEW_TOOLS = TOOLS_ADDED_FOR_HEAD
HINTS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def with_query(server: HttpServer, **params: str) -> HttpServer:
    return dataclasses.replace(server, mcp_url=f"{server.mcp_url}?{urlencode(params)}")


async def names(server: HttpServer) -> dict[str, Any]:
    async with http_client(server) as client:
        return {t.name: t for t in (await client.list_tools()).tools}


def openapi_errors(component: str, value: Any) -> list[str]:
    """Why ``value`` is not a valid ``component`` of Neon's OpenAPI document ([] when it is)."""
    schema = {"$ref": f"#/components/schemas/{component}", "components": NEON_AUTH_SCHEMAS["components"]}
    return [e.message for e in Draft202012Validator(schema).iter_errors(value)]


def main_rows(neon: Neon, project_id: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(neon.uri(neon.target(project_id))) as conn:
        return conn.execute(query).fetchall()


async def test_surface_is_neons_34_tools_with_its_grants(http_server: HttpServer) -> None:
    full = await names(http_server)
    assert set(full) == set(REFERENCE["tools"]) and len(full) == 34
    for name in NEW_TOOLS:
        got = full[name].annotations.model_dump(by_alias=True, exclude_none=True)
        assert got == {k: REFERENCE["tools"][name][k] for k in HINTS}, name
    scoped = await names(with_query(http_server, projectId="any-project"))
    hidden = set(REFERENCE["hidden_when_project_scoped"])  # 7 of Neon's 34, leaving 27
    assert set(scoped) == set(REFERENCE["tools"]) - hidden and "list_shared_projects" not in scoped
    for name in NEW_TOOLS - {"list_shared_projects"}:
        inner = scoped[name].input_schema["properties"]["params"]
        assert "projectId" not in inner["properties"] and "projectId" not in inner.get("required", []), name
    read_only = await names(with_query(http_server, projectId="any-project", readonly="true"))
    safe = {name for name, facts in REFERENCE["tools"].items() if facts["readOnlySafe"]}
    assert set(read_only) == safe - hidden  # 17 at Neon HEAD
    assert {"get_neon_auth_config", "query_logs", "list_log_fields", "list_log_field_values"} <= set(read_only)
    assert not {"provision_neon_auth", "configure_neon_auth", "provision_neon_data_api"} & set(read_only)
    auth_only = await names(with_query(http_server, category="neon_auth"))
    assert set(auth_only) == {"provision_neon_auth", "configure_neon_auth", "get_neon_auth_config", "search", "fetch"}
    logs_only = await names(with_query(http_server, projectId="any-project", category="observability"))
    assert set(logs_only) == {"query_logs", "list_log_fields", "list_log_field_values"}


async def test_schemas_of_the_new_tools_follow_neon(http_server: HttpServer) -> None:
    full = await names(http_server)

    def inner(name: str) -> dict[str, Any]:
        schema: dict[str, Any] = full[name].input_schema["properties"]["params"]
        return schema

    assert inner("configure_neon_auth")["required"] == ["operation", "projectId"]
    assert "send_test_email" in inner("configure_neon_auth")["properties"]["operation"]["enum"]
    assert inner("list_log_field_values")["required"] == ["field"]
    assert "required" not in inner("query_logs") and "required" not in inner("list_shared_projects")
    assert inner("provision_neon_data_api")["properties"]["authProvider"]["enum"] == ["neon_auth", "external", "none"]
    assert inner("query_logs")["properties"]["minSeverity"]["enum"][-1] == "fatal"


async def test_list_shared_projects_is_empty_with_one_local_account(http_server: HttpServer, project: Proj) -> None:
    async with http_client(http_server) as client:
        shared = json.loads(ok(await call(client, "list_shared_projects", search="test")))
        assert shared["shared_projects"] == [] and shared["count"] == 0
        assert "limit" in err(await call(client, "list_shared_projects", limit=0))
        assert "limit" in err(await call(client, "list_shared_projects", limit="ten"))


async def test_neon_auth_provision_configure_read(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    secret = "s3cret-client-value"
    async with http_client(http_server) as client:
        assert "not provisioned" in err(await call(client, "get_neon_auth_config", projectId=project.id))
        assert "not provisioned" in err(
            await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="set_allow_localhost",
                allow_localhost=False,
            )
        )
        first = ok(await call(client, "provision_neon_auth", projectId=project.id))
        assert "Provisioned Neon Auth" in first and ".invalid" in first
        tables = main_rows(
            neon, project.id, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'neon_auth'"
        )
        assert {r[0] for r in tables} == {"user", "session", "account", "verification"}
        again = ok(await call(client, "provision_neon_auth", projectId=project.id, branchId=project.main))
        assert "already provisioned" in again

        async def configure(**args: Any) -> str:
            return ok(await call(client, "configure_neon_auth", projectId=project.id, **args))

        await configure(operation="add_trusted_origin", trusted_origin="https://app.example.com")
        await configure(operation="set_allow_localhost", allow_localhost=False)
        await configure(operation="update_auth_methods", methods={"email_password": {"allow_sign_up": False}})
        added = await configure(
            operation="add_oauth_provider",
            oauth_provider="microsoft",
            oauth_provider_config={"client_id": "app-id", "client_secret": secret, "microsoft_tenant_id": "t1"},
        )
        await configure(operation="remove_oauth_provider", oauth_provider="github")
        await configure(
            operation="update_email_provider",
            email_provider={
                "type": "standard",
                "host": "smtp.example.com",
                "port": 587,
                "username": "mailer",
                "password": secret,
                "sender_email": "auth@example.com",
                "sender_name": "Example",
            },
        )
        refused = {
            "trusted_origin": await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="add_trusted_origin",
                trusted_origin="http://app.example.com",
            ),
            "https://*": await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="add_trusted_origin",
                trusted_origin="https://*",
            ),
            "allow_localhost": await call(
                client, "configure_neon_auth", projectId=project.id, operation="set_allow_localhost"
            ),
            "email_password": await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="update_auth_methods",
                methods={"email_password": {}},
            ),
            "client_secret": await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="add_oauth_provider",
                oauth_provider="vercel",
                oauth_provider_config={"client_id": "only-id"},
            ),
            "not configured": await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="remove_oauth_provider",
                oauth_provider="github",
            ),
            "is a required property": await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="update_email_provider",
                email_provider={"type": "standard", "host": "h", "port": 25, "username": "u", "password": secret},
            ),
            "sends no email": await call(
                client,
                "configure_neon_auth",
                projectId=project.id,
                operation="send_test_email",
                test_email={
                    "recipient_email": "me@example.com",
                    "host": "smtp.example.com",
                    "port": 587,
                    "username": "u",
                    "password": secret,
                    "sender_email": "auth@example.com",
                    "sender_name": "Example",
                },
            ),
        }
        for needle, result in refused.items():
            assert needle in err(result), needle
        config_text = ok(await call(client, "get_neon_auth_config", projectId=project.id))
    config = json.loads(config_text.split("\n", 1)[1])
    assert config["trusted_origins"] == ["https://app.example.com"]
    assert config["allow_localhost"] is False
    assert config["auth_methods"]["email_password"]["allow_sign_up"] is False
    assert config["auth_methods"]["email_password"]["enabled"] is True
    providers = {p["id"]: p for p in config["oauth_providers"]}
    assert set(providers) == {"google", "microsoft"}
    assert providers["microsoft"] == {
        "id": "microsoft",
        "type": "standard",
        "client_id": "app-id",
        "client_secret": "***redacted***",
    }
    assert providers["google"]["client_secret"] is None
    assert config["email_provider"]["password"] == "***redacted***"
    assert config["branch_name"] == "main" and config["db_name"] == "neondb"
    assert openapi_errors("NeonAuthIntegration", config["integration"]) == []
    for shown in (added, config_text, *(str(r.content) for r in refused.values())):
        assert secret not in shown
    stored = neon.catalog.get_neon_auth(project.id, project.main)
    assert stored is not None and secret not in json.dumps(stored["settings"])


async def test_neon_auth_rest_routes(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    path = f"/projects/{project.id}/branches/{project.main}/auth"
    with http_server.api() as api:
        missing = api.get(path)
        assert missing.status_code == 404 and "not enabled" in missing.json()["message"]
        assert "auth_provider" in api.post(path, json={}).json()["message"]
        assert api.post(path, json={"auth_provider": "stack"}).status_code == 400
        assert api.post(path, json={"auth_provider": "better_auth", "database_name": "nope"}).status_code == 404
        created = api.post(path, json={"auth_provider": "better_auth", "database_name": "neondb"})
        assert created.status_code == 201, created.text
        assert openapi_errors("NeonAuthCreateIntegrationResponse", created.json()) == []
        assert created.json()["schema_name"] == "neon_auth"
        assert api.post(path, json={"auth_provider": "better_auth"}).status_code == 409
        got = api.get(path)
        assert got.status_code == 200 and openapi_errors("NeonAuthIntegration", got.json()) == []
        assert got.json()["branch_id"] == project.main and got.json()["db_name"] == "neondb"
        assert api.get(f"/projects/{project.id}/branches/br-not-here/auth").status_code == 404
    with http_server.api() as api:
        fresh = {part: api.get(f"{path}/{part}").json() for part in ("email_provider", "email_and_password")}
    assert openapi_errors("NeonAuthEmailServerConfig", fresh["email_provider"]) == []
    assert fresh["email_and_password"]["disable_sign_up"] is False
    secret = "rest-view-secret"
    async with http_client(http_server) as client:
        config = ok(await call(client, "get_neon_auth_config", projectId=project.id))
        for args in (
            {"operation": "add_trusted_origin", "trusted_origin": "https://rest.example.com"},
            {"operation": "set_allow_localhost", "allow_localhost": False},
            {"operation": "update_auth_methods", "methods": {"email_password": {"allow_sign_up": False}}},
            {
                "operation": "add_oauth_provider",
                "oauth_provider": "microsoft",
                "oauth_provider_config": {"client_id": "id", "client_secret": secret},
            },
        ):
            ok(await call(client, "configure_neon_auth", projectId=project.id, **args))
    assert got.json()["jwks_url"] in config
    with http_server.api() as api:
        views = {
            part: api.get(f"{path}/{part}")
            for part in ("domains", "allow_localhost", "email_and_password", "oauth_providers")
        }
        assert api.get(f"/projects/{project.id}/branches/br-not-here/auth/domains").status_code == 404
    assert all(r.status_code == 200 and secret not in r.text for r in views.values())
    assert openapi_errors("NeonAuthRedirectURIWhitelistResponse", views["domains"].json()) == []
    assert [d["domain"] for d in views["domains"].json()["domains"]] == ["https://rest.example.com"]
    assert views["allow_localhost"].json() == {"allow_localhost": False}
    assert views["email_and_password"].json()["disable_sign_up"] is True
    assert openapi_errors("ListNeonAuthOauthProvidersResponse", views["oauth_providers"].json()) == []
    microsoft = next(p for p in views["oauth_providers"].json()["providers"] if p["id"] == "microsoft")
    assert microsoft == {"id": "microsoft", "type": "standard", "client_id": "id", "client_secret": "***redacted***"}


async def test_data_api_is_an_honest_error_that_changes_nothing(
    http_server: HttpServer, project: Proj, neon: Neon
) -> None:
    async with http_client(http_server) as client:
        asked = err(await call(client, "provision_neon_data_api", projectId=project.id))
        assert "no Data API" in asked and "nothing was changed" in asked and "not provisioned" in asked
        first = err(
            await call(
                client,
                "provision_neon_data_api",
                projectId=project.id,
                authProvider="neon_auth",
                provisionNeonAuthFirst=True,
            )
        )
        assert "nothing was changed" in first
        assert "jwksUrl" in err(
            await call(client, "provision_neon_data_api", projectId=project.id, authProvider="external")
        )
        assert "'nope'" in err(await call(client, "provision_neon_data_api", projectId=project.id, databaseName="nope"))
    assert neon.catalog.get_neon_auth(project.id, project.main) is None
    assert main_rows(neon, project.id, "SELECT to_regnamespace('neon_auth')") == [(None,)]


async def test_log_tools_say_there_is_no_log_pipeline(http_server: HttpServer, project: Proj) -> None:
    async with http_client(http_server) as client:
        for tool, extra in (
            ("query_logs", {"since": "30m"}),
            ("list_log_fields", {}),
            ("list_log_field_values", {"field": "service_name"}),
        ):
            message = err(await call(client, tool, projectId=project.id, **extra))
            assert "no log pipeline" in message and project.main in message, tool
        assert "since" in err(await call(client, "query_logs", projectId=project.id, since="an hour"))
        assert "startTime" in err(await call(client, "query_logs", projectId=project.id, startTime="yesterday"))
        assert "field" in err(await call(client, "list_log_field_values", projectId=project.id, field=" "))
        assert "not found" in err(await call(client, "query_logs", projectId="no-such-project"))
        missing = err(await call(client, "list_log_fields", projectId=project.id, branchId="br-missing"))
        assert missing == "branch not found\n[HTTP 404] branch not found"
        assert "source" in err(await call(client, "query_logs", projectId=project.id, source="kernel"))
    async with http_client(with_query(http_server, projectId=project.id)) as pinned:
        assert project.main in err(await call(pinned, "list_log_fields"))


HAS_EXTENSION = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements') AS extension_exists"
STATEMENTS = (
    "SELECT query, calls, mean_exec_time, wal_bytes FROM pg_stat_statements ORDER BY mean_exec_time DESC LIMIT 100"
)


async def test_pg_stat_statements_as_neons_list_slow_queries_reads_it(http_server: HttpServer, project: Proj) -> None:
    """Neon's tool checks pg_extension, then reads pg_stat_statements as the project role, unqualified."""
    async with http_client(http_server) as client:

        async def rows(sql: str, branch: str | None = None) -> list[dict[str, Any]]:
            where = {"branchId": branch} if branch else {}
            found: list[dict[str, Any]] = json.loads(
                ok(await call(client, "run_sql", projectId=project.id, sql=sql, **where))
            )
            return found

        assert await rows(HAS_EXTENSION) == [{"extension_exists": True}]
        await rows("SELECT count(*) AS stat_marker FROM posts")
        on_main = await rows(STATEMENTS)
        assert any("stat_marker" in r["query"] for r in on_main)
        assert all(r["query"] != "<insufficient privilege>" for r in on_main)
        made = ok(await call(client, "create_branch", projectId=project.id, branchName="stats-child"))
        child = re.search(r"\(id (br-[a-z0-9-]+)\)", made)
        assert child is not None, made
        assert await rows(HAS_EXTENSION, child.group(1)) == [{"extension_exists": True}]
        await rows("SELECT count(*) AS child_marker FROM posts", child.group(1))
        on_child = [r["query"] for r in await rows(STATEMENTS, child.group(1))]
        assert any("child_marker" in q for q in on_child) and not any("stat_marker" in q for q in on_child)
        slow = json.loads(
            ok(await call(client, "list_slow_queries", projectId=project.id, minExecutionTime=0, limit=100))
        )
        assert any("stat_marker" in q["query"] for q in slow["slow_queries"])


def test_the_twins_own_upkeep_leaves_pg_stat_statements_to_the_user(neon: Neon, project: Proj) -> None:
    """The superuser's statements (clones, catalog reads, a pg_dump per branch) are not recorded:
    in a busy cluster they filled pg_stat_statements and evicted the user's own entries."""
    if not neon.cluster.embedded:
        return  # an external DATABASE_URL server keeps its own settings
    target = neon.target(project.id)
    with psycopg.connect(neon.cluster.conninfo(target.database.pg_name), autocommit=True) as admin:
        admin.execute("SELECT 'upkeep_marker' AS upkeep_marker")
        with psycopg.connect(neon.role_conninfo(target), autocommit=True) as user:
            user.execute("SELECT 'user_marker' AS user_marker")
        recorded = admin.execute(
            "SELECT query FROM pg_localneon_stats.pg_stat_statements WHERE query LIKE '%AS %\\_marker' "
            "AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchall()
    queries = [q for (q,) in recorded]
    assert any("user_marker" in q for q in queries), queries
    assert not any("upkeep_marker" in q for q in queries), queries
