"""The Neon-shaped REST API over HTTP, with every response validated against Neon's OpenAPI spec."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from tests.localneon.helpers import HttpServer
from tests.neon_openapi import spec

FIXTURE = """
CREATE TABLE authors (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE posts (id serial PRIMARY KEY, author_id int REFERENCES authors(id), title text NOT NULL, content text);
CREATE INDEX posts_author_idx ON posts (author_id);
INSERT INTO authors (name) SELECT 'author ' || g FROM generate_series(1, 20) g;
INSERT INTO posts (author_id, title, content) SELECT 1 + g % 20, 'post ' || g, 'text' FROM generate_series(1, 300) g;
"""


def response_schema(path: str, method: str, status: int) -> dict[str, Any]:
    doc = spec()
    response = doc["paths"][path][method]["responses"][str(status)]
    if "$ref" in response:
        response = doc["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    return response["content"]["application/json"]["schema"]


def check(response: httpx.Response, path: str, method: str, status: int) -> dict[str, Any]:
    """Assert the status code and that the body validates against the spec's response schema."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    root = {"allOf": [response_schema(path, method, status)], "components": spec()["components"]}
    errors = [
        f"{list(e.absolute_path)}: {e.message}"
        for e in OAS30Validator(root, format_checker=oas30_format_checker).iter_errors(body)
    ]
    assert not errors, errors
    return body


def check_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    root = {"allOf": [{"$ref": "#/components/schemas/GeneralError"}], "components": spec()["components"]}
    assert not list(OAS30Validator(root).iter_errors(body))
    return str(body["message"])


def new_project(api: httpx.Client, name: str = "api-test") -> dict[str, Any]:
    return check(api.post("/projects", json={"project": {"name": name}}), "/projects", "post", 201)


@pytest.fixture
def api(http_server: HttpServer) -> Any:
    with http_server.api() as client:
        yield client


def test_auth_and_health(http_server: HttpServer) -> None:
    with httpx.Client(timeout=30) as plain:
        assert plain.get(f"{http_server.url}/healthz").json() == {"status": "ok"}
        assert "bearer" in check_error(plain.get(f"{http_server.api_url}/projects"), 401)
        wrong = plain.get(f"{http_server.api_url}/projects", headers={"Authorization": "Bearer wrong"})
        check_error(wrong, 401)
        mcp = plain.post(http_server.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert mcp.status_code == 401


def test_project_lifecycle_and_fixture_load(api: httpx.Client) -> None:
    created = new_project(api)
    project_id = created["project"]["id"]
    try:
        assert created["branch"]["default"] is True and created["branch"]["name"] == "main"
        assert [d["name"] for d in created["databases"]] == ["neondb"]
        assert all(op["status"] == "finished" for op in created["operations"])
        role = created["roles"][0]["name"]
        main_id = created["branch"]["id"]
        got = check(api.get(f"/projects/{project_id}"), "/projects/{project_id}", "get", 200)
        assert got["project"]["id"] == project_id
        uri = check(
            api.get(
                f"/projects/{project_id}/connection_uri",
                params={"database_name": "neondb", "role_name": role, "branch_id": main_id},
            ),
            "/projects/{project_id}/connection_uri",
            "get",
            200,
        )["uri"]
        assert uri == created["connection_uris"][0]["connection_uri"]
        alias = api.get(
            f"/projects/{project_id}/connection_uri", params={"database_name": "neondb", "role_name": "neondb_owner"}
        )
        assert alias.json()["uri"] == uri
        missing = {"database_name": "neondb", "role_name": "someone_else"}
        check_error(api.get(f"/projects/{project_id}/connection_uri", params=missing), 404)
        with psycopg.connect(uri) as conn:
            conn.execute(FIXTURE)
        with psycopg.connect(uri) as conn:
            assert conn.execute("SELECT count(*) FROM posts").fetchone() == (300,)
        schema = check(
            api.get(f"/projects/{project_id}/branches/{main_id}/schema", params={"db_name": "neondb", "format": "sql"}),
            "/projects/{project_id}/branches/{branch_id}/schema",
            "get",
            200,
        )["sql"]
        assert "CREATE TABLE public.posts" in schema
        assert "-- PostgreSQL database dump complete" in schema
        for part in ("databases", "roles", "endpoints"):
            path = "/projects/{project_id}/branches/{branch_id}/" + part
            listed = check(api.get(f"/projects/{project_id}/branches/{main_id}/{part}"), path, "get", 200)
            assert len(listed[part]) == 1
        op_id = created["operations"][0]["id"]
        op = check(
            api.get(f"/projects/{project_id}/operations/{op_id}"),
            "/projects/{project_id}/operations/{operation_id}",
            "get",
            200,
        )
        assert op["operation"]["status"] == "finished"
        ops = check(api.get(f"/projects/{project_id}/operations"), "/projects/{project_id}/operations", "get", 200)
        assert {o["id"] for o in created["operations"]} <= {o["id"] for o in ops["operations"]}
        check_error(api.get(f"/projects/{project_id}/operations/00000000-0000-0000-0000-000000000000"), 404)
    finally:
        check(api.delete(f"/projects/{project_id}"), "/projects/{project_id}", "delete", 200)
    check_error(api.get(f"/projects/{project_id}"), 404)


def test_list_projects_search_and_cursor(api: httpx.Client) -> None:
    ids = [new_project(api, f"paging-kiwi-{i}")["project"]["id"] for i in range(3)]
    try:
        first = check(api.get("/projects", params={"search": "paging-kiwi", "limit": 2}), "/projects", "get", 200)
        assert len(first["projects"]) == 2
        rest = check(
            api.get("/projects", params={"search": "paging-kiwi", "limit": 2, "cursor": first["pagination"]["cursor"]}),
            "/projects",
            "get",
            200,
        )
        seen = [p["id"] for p in first["projects"] + rest["projects"]]
        assert sorted(seen) == sorted(ids)
        check_error(api.get("/projects", params={"limit": 0}), 400)
    finally:
        for project_id in ids:
            api.delete(f"/projects/{project_id}")


def test_branches_restore_compare_and_delete(api: httpx.Client) -> None:
    created = new_project(api)
    project_id = created["project"]["id"]
    main_id = created["branch"]["id"]
    uri = created["connection_uris"][0]["connection_uri"]
    base = f"/projects/{project_id}/branches"
    try:
        with psycopg.connect(uri) as conn:
            conn.execute(FIXTURE)
        golden = check(
            api.post(base, json={"branch": {"name": "golden", "parent_id": main_id}}),
            "/projects/{project_id}/branches",
            "post",
            201,
        )["branch"]
        assert golden["parent_id"] == main_id
        check_error(api.post(base, json={"branch": {"name": "golden"}}), 409)
        listed = check(api.get(base), "/projects/{project_id}/branches", "get", 200)
        assert {b["name"] for b in listed["branches"]} == {"main", "golden"}
        paged = check(api.get(base, params={"limit": 1}), "/projects/{project_id}/branches", "get", 200)
        assert len(paged["branches"]) == 1 and "next" in paged["pagination"]
        one = check(api.get(f"{base}/{golden['id']}"), "/projects/{project_id}/branches/{branch_id}", "get", 200)
        assert one["branch"]["name"] == "golden"

        with psycopg.connect(uri) as conn:
            conn.execute("DROP TABLE posts")
        diff = check(
            api.get(f"{base}/{main_id}/compare_schema", params={"db_name": "neondb", "base_branch_id": golden["id"]}),
            "/projects/{project_id}/branches/{branch_id}/compare_schema",
            "get",
            200,
        )["diff"]
        assert "-CREATE TABLE public.posts" in diff

        restored = check(
            api.post(f"{base}/{main_id}/restore", json={"source_branch_id": golden["id"]}),
            "/projects/{project_id}/branches/{branch_id}/restore",
            "post",
            200,
        )
        assert restored["branch"]["id"] == main_id and restored["branch"]["default"] is True
        with psycopg.connect(uri) as conn:
            assert conn.execute("SELECT count(*) FROM posts").fetchone() == (300,)

        check_error(api.delete(f"{base}/{main_id}"), 400)
        deleted = check(
            api.delete(f"{base}/{golden['id']}"), "/projects/{project_id}/branches/{branch_id}", "delete", 200
        )
        assert deleted["operations"]
        assert api.delete(f"{base}/{golden['id']}").status_code == 204
        check_error(api.get(f"{base}/{golden['id']}"), 404)
        check_error(api.get("/projects/no-such-project-9/branches"), 404)
        check_error(api.post(f"{base}/{main_id}/restore", json={}), 400)
        check_error(api.post("/projects", json={"name": "missing project key"}), 400)
    finally:
        api.delete(f"/projects/{project_id}")


def test_schema_dumps_compare_equal_across_projects(api: httpx.Client) -> None:
    dumps = []
    projects = [new_project(api) for _ in range(2)]
    try:
        for created in projects:
            with psycopg.connect(created["connection_uris"][0]["connection_uri"]) as conn:
                conn.execute(FIXTURE)
            pid, bid = created["project"]["id"], created["branch"]["id"]
            dumps.append(api.get(f"/projects/{pid}/branches/{bid}/schema", params={"db_name": "neondb"}).json()["sql"])
        assert dumps[0] == dumps[1]
        assert "OWNER TO" not in dumps[0] and "GRANT " not in dumps[0]
    finally:
        for created in projects:
            api.delete(f"/projects/{created['project']['id']}")


def test_concurrent_branch_creation_from_one_parent(api: httpx.Client) -> None:
    created = new_project(api)
    project_id = created["project"]["id"]
    main_id = created["branch"]["id"]
    with psycopg.connect(created["connection_uris"][0]["connection_uri"]) as conn:
        conn.execute(FIXTURE)

    def make(i: int) -> httpx.Response:
        return api.post(f"/projects/{project_id}/branches", json={"branch": {"name": f"c{i}", "parent_id": main_id}})

    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            responses = list(pool.map(make, range(6)))
        assert [r.status_code for r in responses] == [201] * 6
        branches = [r.json() for r in responses]
        assert len({b["branch"]["id"] for b in branches}) == 6
        for body in branches:
            with psycopg.connect(body["connection_uris"][0]["connection_uri"]) as conn:
                assert conn.execute("SELECT count(*) FROM posts").fetchone() == (300,)
    finally:
        api.delete(f"/projects/{project_id}")


def test_pool_layout_golden_root_and_main_default(api: httpx.Client) -> None:
    """The layout a pooled eval uses: root branch `golden`, `main` branched from it and made default."""
    body = {"project": {"name": "pool", "branch": {"name": "golden", "database_name": "appdb", "role_name": "app"}}}
    created = check(api.post("/projects", json=body), "/projects", "post", 201)
    project_id, golden_id = created["project"]["id"], created["branch"]["id"]
    base = f"/projects/{project_id}/branches"
    try:
        assert created["branch"]["name"] == "golden" and created["databases"][0]["name"] == "appdb"
        assert created["roles"][0]["name"].startswith("app_")
        with psycopg.connect(created["connection_uris"][0]["connection_uri"]) as conn:
            conn.execute(FIXTURE)
        main = api.post(base, json={"branch": {"name": "main", "parent_id": golden_id}}).json()["branch"]
        made_default = check(
            api.post(f"{base}/{main['id']}/set_as_default"),
            "/projects/{project_id}/branches/{branch_id}/set_as_default",
            "post",
            200,
        )
        assert made_default["branch"]["default"] is True
        branches = api.get(base).json()["branches"]
        assert [b["name"] for b in branches if b["default"]] == ["main"]
        params = {"database_name": "appdb", "role_name": "app", "branch_id": main["id"]}
        uri = api.get(f"/projects/{project_id}/connection_uri", params=params).json()["uri"]
        with psycopg.connect(uri) as conn:
            conn.execute("TRUNCATE posts")
        check(
            api.post(f"{base}/{main['id']}/restore", json={"source_branch_id": golden_id}),
            "/projects/{project_id}/branches/{branch_id}/restore",
            "post",
            200,
        )
        with psycopg.connect(uri) as conn:
            assert conn.execute("SELECT count(*) FROM posts").fetchone() == (300,)
        check_error(api.delete(f"{base}/{golden_id}"), 400)
    finally:
        api.delete(f"/projects/{project_id}")


def test_the_server_keeps_idle_connections_longer_than_its_clients_do() -> None:
    """Whoever closes an idle connection first must be the client, or a reused one can die unanswered."""
    from httpx._config import DEFAULT_LIMITS

    from localneon.serve.cli import KEEP_ALIVE_S

    node_fetch_keep_alive_s = 4  # undici's keepAliveTimeout default, what Neon's npm server calls through
    assert DEFAULT_LIMITS.keepalive_expiry is not None
    assert max(DEFAULT_LIMITS.keepalive_expiry, node_fetch_keep_alive_s) * 5 < KEEP_ALIVE_S
