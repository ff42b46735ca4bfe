"""The REST calls Neon's own MCP servers make beyond the harness's (the account, the organization,
shared projects, one database), over HTTP, each response validated against Neon's OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.localneon.helpers import HttpServer
from tests.localneon.test_api import check, check_error, new_project

DATABASE = "/projects/{project_id}/branches/{branch_id}/databases/{database_name}"
DATABASES = "/projects/{project_id}/branches/{branch_id}/databases"


@pytest.fixture
def api(http_server: HttpServer) -> Iterator[httpx.Client]:
    with http_server.api() as client:
        yield client


def test_the_account_is_a_user_of_the_one_local_organization(api: httpx.Client) -> None:
    auth = check(api.get("/auth"), "/auth", "get", 200)
    user = check(api.get("/users/me"), "/users/me", "get", 200)
    assert auth["auth_method"] == "api_key_user" and auth["account_id"] == user["id"]
    assert "billing_account" not in user  # so list_projects looks the organization up, as on a free account
    orgs = check(api.get("/users/me/organizations"), "/users/me/organizations", "get", 200)["organizations"]
    assert len(orgs) == 1
    org = check(api.get(f"/organizations/{orgs[0]['id']}"), "/organizations/{org_id}", "get", 200)
    assert org == orgs[0]
    members = check(api.get(f"/organizations/{org['id']}/members"), "/organizations/{org_id}/members", "get", 200)
    assert [m["member"]["user_id"] for m in members["members"]] == [user["id"]]
    assert members["members"][0]["member"]["org_id"] == org["id"]


def test_an_unknown_organization_is_404_naming_the_local_one(api: httpx.Client) -> None:
    assert "org-localneon" in check_error(api.get("/organizations/org-elsewhere"), 404)
    check_error(api.get("/organizations/org-elsewhere/members"), 404)


def test_shared_projects_is_an_empty_list_not_a_project_id(api: httpx.Client) -> None:
    project = new_project(api, "shared-check")["project"]
    try:
        shared = check(api.get("/projects/shared", params={"limit": 5}), "/projects/shared", "get", 200)
        assert shared["projects"] == []
        assert "limit" in check_error(api.get("/projects/shared", params={"limit": 0}), 400)
        listed = api.get("/projects", params={"limit": 400}).json()["projects"]
        assert project["id"] in [p["id"] for p in listed]  # the project is listed as one's own, not shared
    finally:
        api.delete(f"/projects/{project['id']}")


def test_one_database_of_a_branch(api: httpx.Client) -> None:
    created = new_project(api, "database-check")
    project_id, branch_id = created["project"]["id"], created["branch"]["id"]
    try:
        path = f"/projects/{project_id}/branches/{branch_id}/databases"
        body: dict[str, Any] = check(api.get(f"{path}/neondb"), DATABASE, "get", 200)
        assert body["database"] == created["databases"][0]
        missing = check_error(api.get(f"{path}/nope"), 404)
        assert "'nope'" in missing and "neondb" in missing  # names what exists
        check_error(api.get(f"/projects/{project_id}/branches/br-none-00000000/databases/neondb"), 404)
    finally:
        api.delete(f"/projects/{project_id}")


def test_uris_handed_out_are_tcp(api: httpx.Client) -> None:
    """Host 127.0.0.1 and a port, the form neon() and any TCP client accept; the endpoint host agrees."""
    from urllib.parse import urlsplit

    import psycopg

    created = new_project(api, "tcp-check")
    project_id = created["project"]["id"]
    try:
        uri = created["connection_uris"][0]["connection_uri"]
        role = created["roles"][0]["name"]
        asked = api.get(f"/projects/{project_id}/connection_uri", params={"database_name": "neondb", "role_name": role})
        parts = urlsplit(check(asked, "/projects/{project_id}/connection_uri", "get", 200)["uri"])
        assert (parts.hostname, parts.query) == ("127.0.0.1", "") and parts.port
        assert urlsplit(uri).netloc == parts.netloc
        assert created["endpoints"][0]["host"] == "127.0.0.1"
        with psycopg.connect(uri, connect_timeout=10) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (role,)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(uri.replace(f":{created['roles'][0]['password']}@", ":wrong@"), connect_timeout=10)
    finally:
        api.delete(f"/projects/{project_id}")


def test_a_second_database_is_made_copied_to_children_and_dropped(api: httpx.Client) -> None:
    """`POST .../databases` (what a fixture folder's second file needs): owned by the project's role,
    copied into branches made afterwards, refused twice, and gone after `DELETE`."""
    import psycopg

    created = new_project(api, "second-database")
    project_id, branch_id = created["project"]["id"], created["branch"]["id"]
    role = created["roles"][0]["name"]
    databases = f"/projects/{project_id}/branches/{branch_id}/databases"
    try:
        spec = {"database": {"name": "reporting", "owner_name": role}}
        made = check(api.post(databases, json=spec), DATABASES, "post", 201)
        assert made["database"]["name"] == "reporting" and made["database"]["owner_name"] == role
        assert "already exists" in check_error(api.post(databases, json=spec), 409)
        unknown_owner = {"database": {"name": "other", "owner_name": "someone_else"}}
        assert "someone_else" in check_error(api.post(databases, json=unknown_owner), 404)
        assert "owner_name" in check_error(api.post(databases, json={"database": {"name": "x"}}), 400)
        listed = check(api.get(databases), DATABASES, "get", 200)["databases"]
        assert [d["name"] for d in listed] == ["neondb", "reporting"]
        params = {"database_name": "reporting", "role_name": role, "branch_id": branch_id}
        uri = api.get(f"/projects/{project_id}/connection_uri", params=params).json()["uri"]
        with psycopg.connect(uri, connect_timeout=10, autocommit=True) as conn:
            conn.execute("CREATE TABLE rollup (day date PRIMARY KEY)")
        child = api.post(f"/projects/{project_id}/branches", json={"branch": {"parent_id": branch_id}}).json()
        child_databases = api.get(f"/projects/{project_id}/branches/{child['branch']['id']}/databases").json()
        assert [d["name"] for d in child_databases["databases"]] == ["neondb", "reporting"]
        schema = api.get(
            f"/projects/{project_id}/branches/{child['branch']['id']}/schema",
            params={"db_name": "reporting", "format": "sql"},
        ).json()["sql"]
        assert "CREATE TABLE public.rollup" in schema
        check(api.delete(f"{databases}/reporting"), DATABASE, "delete", 200)
        assert [d["name"] for d in api.get(databases).json()["databases"]] == ["neondb"]
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(uri, connect_timeout=10)
    finally:
        api.delete(f"/projects/{project_id}")
