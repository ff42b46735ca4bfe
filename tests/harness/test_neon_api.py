"""The Neon API client against the local server's /api/v2, plus a 127.0.0.1 proxy that answers 423/503 first."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from datetime import timedelta

import httpx
import pytest

from harness.mcp.server_process import ServerEndpoints
from harness.servers.neon.api import NeonAPI, NeonAPIError
from tests.fakes.jsonserver import JsonServer, Request, Response, serving
from tests.harness.conftest import TOKEN


async def test_projects_and_branches_paginate_and_operations_finish(api: NeonAPI) -> None:
    prefix = f"eval-apitest-{secrets.token_hex(3)}"
    created = []
    try:
        for index in range(5):
            body = await api.create_project(f"{prefix}-{index}")
            assert all(op["status"] in ("finished", "skipped", "scheduling", "running") for op in body["operations"])
            created.append(body["project"]["id"])
        listed = await api.list_projects(search=prefix, limit=2)
        assert sorted(p["id"] for p in listed) == sorted(created)
        project_id = created[0]
        main = await api.default_branch(project_id)
        ttl = {0: timedelta(hours=2), 1: None, 2: timedelta(hours=2)}  # expires_at only when asked for
        children = [
            (await api.create_branch(project_id, parent_id=main["id"], name=f"child-{i}", expires_in=ttl[i]))["branch"]
            for i in range(3)
        ]
        assert [bool(child.get("expires_at")) for child in children] == [True, False, True]
        branches = await api.list_branches(project_id, limit=1)
        assert sorted(b["id"] for b in branches) == sorted([main["id"], *(c["id"] for c in children)])
        for child in children:
            await api.delete_branch(project_id, child["id"])
        await api.delete_branch(project_id, children[0]["id"])  # already gone: not an error
        assert [b["id"] for b in await api.list_branches(project_id)] == [main["id"]]
    finally:
        for project_id in created:
            await api.delete_project(project_id)
    assert await api.list_projects(search=prefix) == []


async def test_errors_name_the_call_and_neons_message_never_the_key(api: NeonAPI) -> None:
    with pytest.raises(NeonAPIError) as raised:
        await api.get_project("no-such-project-00000000")
    error = raised.value
    assert error.status == 404 and "GET /projects/no-such-project-00000000" in str(error)
    assert error.message and TOKEN not in str(error)
    bad = NeonAPI(api.base_url, "wrong-key-xyz-123")
    with pytest.raises(NeonAPIError) as unauthorized:
        await bad.list_projects()
    await bad.aclose()
    assert unauthorized.value.status == 401 and "wrong-key-xyz-123" not in str(unauthorized.value)


@pytest.fixture
def flaky_proxy(endpoints: ServerEndpoints) -> Iterator[JsonServer]:
    """GET /api/v2/projects answers 423, then 503 (Retry-After: 0), then forwards to the real server."""
    plan = [423, 503]

    def projects(request: Request) -> Response:
        if plan:
            status = plan.pop(0)
            return Response(
                status, {"code": "", "message": "project already has running operations"}, {"Retry-After": "0"}
            )
        forwarded = httpx.get(
            endpoints.api_url + "/projects", headers={"Authorization": request.headers["authorization"]}
        )
        return Response(forwarded.status_code, forwarded.json())

    def always_locked(request: Request) -> Response:
        return Response(
            423, {"code": "locked", "message": "project already has running operations"}, {"Retry-After": "0"}
        )

    server = JsonServer({"GET /api/v2/projects": projects, "POST /api/v2/projects": always_locked}).start()
    yield server
    server.stop()


async def test_423_and_503_are_retried_then_give_up_with_a_named_error(flaky_proxy: JsonServer) -> None:
    client = NeonAPI(flaky_proxy.url + "/api/v2", TOKEN, max_retries=3, backoff=0.01)
    try:
        body = await client.request("GET", "/projects")
        assert "projects" in body
        assert [r.path for r in flaky_proxy.requests].count("/api/v2/projects") == 3
        with pytest.raises(NeonAPIError) as raised:
            await client.create_project("eval-never")
        assert raised.value.status == 423 and raised.value.code == "locked"
        assert "POST /projects" in str(raised.value) and TOKEN not in str(raised.value)
        posts = [r for r in flaky_proxy.requests if r.method == "POST"]
        assert len(posts) == 4  # the first try and three retries
        assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in flaky_proxy.requests)
    finally:
        await client.aclose()


async def test_a_call_that_gets_no_answer_is_repeated_only_when_it_is_idempotent() -> None:
    """CI met a branch DELETE whose connection closed unanswered: the branch was left behind."""
    dropped = {"DELETE": 1, "POST": 1}

    def once_dropped(answer: Response) -> Callable[[Request], Response]:
        def route(request: Request) -> Response:
            if dropped[request.method]:
                dropped[request.method] -= 1
                return Response(drop=True)
            return answer

        return route

    routes = {
        "DELETE /api/v2/projects/p-1/branches/br-1": once_dropped(Response(200, {"operations": []})),
        "POST /api/v2/projects/p-1/branches": once_dropped(Response(201, {"branch": {"id": "br-2"}})),
    }
    with serving(routes) as server:
        client = NeonAPI(server.url + "/api/v2", TOKEN, backoff=0.01)
        try:
            await client.delete_branch("p-1", "br-1")
            assert [r.method for r in server.requests] == ["DELETE", "DELETE"]
            with pytest.raises(NeonAPIError, match="no response") as raised:
                await client.request("POST", "/projects/p-1/branches", json={})
            assert raised.value.call == "POST /projects/p-1/branches" and TOKEN not in str(raised.value)
            assert [r.method for r in server.requests].count("POST") == 1  # a create is never sent twice
        finally:
            await client.aclose()


async def test_operations_are_polled_until_finished_and_failures_raise() -> None:
    polls = {"op-ok": ["running", "running", "finished"], "op-bad": ["running", "failed"]}

    def operation(op_id: str) -> Callable[[Request], Response]:
        def answer(request: Request) -> Response:
            status = polls[op_id].pop(0)
            return Response(200, {"operation": {"id": op_id, "action": "create_branch", "status": status}})

        return answer

    routes = {f"GET /api/v2/projects/p-1/operations/{op}": operation(op) for op in polls}
    with serving(routes) as server:
        client = NeonAPI(server.url + "/api/v2", TOKEN, operation_poll=0.01)
        await client.wait_operations(
            "p-1", [{"id": "op-ok", "status": "scheduling"}, {"id": "skip", "status": "skipped"}]
        )
        assert polls["op-ok"] == []
        with pytest.raises(NeonAPIError, match="failed"):
            await client.wait_operations("p-1", [{"id": "op-bad", "status": "scheduling"}])
        await client.aclose()
