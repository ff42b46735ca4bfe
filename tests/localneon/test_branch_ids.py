"""A branch is named by its id, as on Neon: where Neon's tools and API routes take a branch id, a
branch's *name* is refused the way Neon refuses it; reset_from_parent, which looks names up itself
at Neon, takes either. Over a real Streamable HTTP session and the real REST API of the server
subprocess; what Neon does is in docs/local-twin.md (branch ids and names, tool by tool).

Neon's API answers a branch id that names no branch with 404 ``{"code": "", "message": "branch not
found"}``; Neon's hosted server (HEAD) passes an API refusal to the model as two text blocks, the
API's message and ``[HTTP <status>] <message>`` (``handleToolError``, for an ``NeonApiError`` under
500). DELETE of such an id is 204 ("the branch doesn't exist or has already been deleted"), which
Neon's delete_branch reports as a deletion.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client import Client
from mcp_types import CallToolResult, TextContent

from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, ok, text

NEON_404 = {"code": "", "message": "branch not found"}
NEON_TOOL_ERROR = ["branch not found", "[HTTP 404] branch not found"]
BRANCH = "scratch-copy"


def blocks(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def make_branch(client: Client, project: Proj, neon: Neon) -> str:
    ok(await call(client, "create_branch", projectId=project.id, branchName=BRANCH))
    made = neon.catalog.get_branch_by_name(project.id, BRANCH)
    assert made is not None
    return made.id


# Every tool that takes a branch id from the model, with the rest of a call that works given the id.
ID_TAKERS: list[tuple[str, str, dict[str, Any]]] = [
    ("run_sql", "branchId", {"sql": "SELECT count(*) FROM posts"}),
    ("run_sql_transaction", "branchId", {"sqlStatements": ["SELECT 1", "SELECT count(*) FROM posts"]}),
    ("describe_table_schema", "branchId", {"tableName": "posts"}),
    ("get_database_tables", "branchId", {}),
    ("describe_branch", "branchId", {}),
    ("get_connection_string", "branchId", {}),
    ("list_branch_computes", "branchId", {}),
    ("compare_database_schema", "branchId", {"databaseName": "neondb"}),
    ("explain_sql_statement", "branchId", {"sql": "SELECT * FROM posts", "analyze": False}),
    ("get_neon_auth_config", "branchId", {}),
    ("create_branch", "parentId", {"branchName": "child-of-scratch"}),
]


@pytest.mark.parametrize(("tool", "argument", "rest"), ID_TAKERS, ids=[t[0] for t in ID_TAKERS])
async def test_a_branch_name_where_neon_takes_an_id_is_refused_as_neon_refuses_it(
    http_server: HttpServer, project: Proj, neon: Neon, tool: str, argument: str, rest: dict[str, Any]
) -> None:
    async with http_client(http_server) as client:
        branch_id = await make_branch(client, project, neon)
        by_name = await call(client, tool, projectId=project.id, **{argument: BRANCH}, **rest)
        assert by_name.is_error and blocks(by_name) == NEON_TOOL_ERROR, blocks(by_name)
        by_id = await call(client, tool, projectId=project.id, **{argument: branch_id}, **rest)
        if tool == "get_neon_auth_config":  # not provisioned yet: whatever it says, the branch was found
            assert "branch not found" not in text(by_id)
        else:
            ok(by_id)


async def test_delete_branch_by_name_deletes_nothing_and_answers_as_neon(
    http_server: HttpServer, project: Proj, neon: Neon
) -> None:
    async with http_client(http_server) as client:
        branch_id = await make_branch(client, project, neon)
        answer = ok(await call(client, "delete_branch", projectId=project.id, branchId=BRANCH))
        assert answer == f"Deleted branch {BRANCH} from project {project.id}."
        assert neon.catalog.get_branch(project.id, branch_id) is not None  # still there, as on Neon
        ok(await call(client, "delete_branch", projectId=project.id, branchId=branch_id))
        assert neon.catalog.get_branch(project.id, branch_id) is None


async def test_reset_from_parent_looks_a_name_up_as_neons_tool_does(
    http_server: HttpServer, project: Proj, neon: Neon
) -> None:
    async with http_client(http_server) as client:
        branch_id = await make_branch(client, project, neon)
        ok(await call(client, "run_sql", projectId=project.id, branchId=branch_id, sql="DELETE FROM posts"))
        ok(await call(client, "reset_from_parent", projectId=project.id, branchIdOrName=BRANCH))
        count = ok(
            await call(client, "run_sql", projectId=project.id, branchId=branch_id, sql="SELECT count(*) FROM posts")
        )
        assert "50" in count
        ok(await call(client, "reset_from_parent", projectId=project.id, branchIdOrName=branch_id))
        unknown_id = await call(client, "reset_from_parent", projectId=project.id, branchIdOrName="br-no-such-branch1")
        assert err(unknown_id) == f'reset_from_parent: Branch ID "br-no-such-branch1" not found in project {project.id}'
        unknown_name = await call(client, "reset_from_parent", projectId=project.id, branchIdOrName="nope")
        message = err(unknown_name)
        assert message.startswith(f'reset_from_parent: Branch name "nope" not found in project {project.id}.\n')
        assert message.splitlines()[-1].startswith("Available branches: ") and BRANCH in message.splitlines()[-1]


async def test_the_api_takes_branch_ids_only_with_neons_404(http_server: HttpServer, project: Proj, neon: Neon) -> None:
    api = http_server.api()
    made = api.post(f"/projects/{project.id}/branches", json={"branch": {"name": BRANCH}})
    assert made.status_code == 201, made.text
    branch_id = made.json()["branch"]["id"]
    p = f"/projects/{project.id}"
    refused = [
        api.get(f"{p}/branches/{BRANCH}"),
        api.get(f"{p}/branches/{BRANCH}/databases"),
        api.get(f"{p}/branches/{BRANCH}/endpoints"),
        api.post(f"{p}/branches", json={"branch": {"name": "from-a-name", "parent_id": BRANCH}}),
        api.post(f"{p}/branches/{branch_id}/restore", json={"source_branch_id": "main"}),
        api.get(
            f"{p}/connection_uri", params={"branch_id": BRANCH, "database_name": "neondb", "role_name": "neondb_owner"}
        ),
        api.get(f"{p}/branches/{branch_id}/compare_schema", params={"db_name": "neondb", "base_branch_id": "main"}),
    ]
    for response in refused:
        assert (response.status_code, response.json()) == (404, NEON_404), (response.request.url, response.text)
    assert neon.catalog.get_branch_by_name(project.id, "from-a-name") is None
    gone = api.delete(f"{p}/branches/{BRANCH}")  # Neon: 204 for an id naming no branch
    assert gone.status_code == 204 and neon.catalog.get_branch(project.id, branch_id) is not None
    assert api.get(f"{p}/branches/{branch_id}").status_code == 200
    uri = api.get(
        f"{p}/connection_uri", params={"branch_id": branch_id, "database_name": "neondb", "role_name": "neondb_owner"}
    )
    assert uri.status_code == 200, uri.text
