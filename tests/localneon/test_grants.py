"""Grants on the MCP URL (projectId, category, readonly), annotations and notices, against Neon's.

Every listing here comes from a real Streamable HTTP session with the server subprocess; the
expected values come from ``localneon/reference/neon-grants.json`` (read from Neon's source).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psycopg
import pytest
from mcp_types import Tool

from harness.servers.neon.conventions import NEON_TOOLS as KNOWN
from harness.servers.neon.conventions import conventional_annotations
from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj, call, err, http_client, ok

REFERENCE = json.loads((Path(__file__).resolve().parents[2] / "localneon/reference/neon-grants.json").read_text())
NEON_TOOLS: dict[str, dict[str, Any]] = REFERENCE["tools"]
BLOCK = REFERENCE["notice_block"]


def scoped(server: HttpServer, *pairs: tuple[str, str]) -> HttpServer:
    return dataclasses.replace(server, mcp_url=f"{server.mcp_url}?{urlencode(list(pairs))}")


async def listing(server: HttpServer) -> dict[str, Tool]:
    async with http_client(server) as client:
        return {t.name: t for t in (await client.list_tools()).tools}


def schema_mentions_project(tool: Tool) -> bool:
    """True if ``projectId`` is a property or required anywhere in the tool's input schema."""
    inner = tool.input_schema["properties"]["params"]
    return "projectId" in inner.get("properties", {}) or "projectId" in inner.get("required", [])


def notice_paragraphs(description: str) -> list[str]:
    """The notice paragraphs at the end of a description; [] when it has no notice block."""
    _head, sep, tail = description.rpartition(BLOCK["before"])
    if not sep:
        return []
    assert tail.endswith(BLOCK["after"]), description[-200:]
    return tail.removesuffix(BLOCK["after"]).split(BLOCK["between"])


def assert_notice(paragraph: str, kind: str, project_id: str = "") -> None:
    for fact in REFERENCE["notices"][kind]["mentions"]:
        fact = fact.replace("<projectId>", project_id)
        assert fact.lower() in paragraph.lower(), f"{kind} notice lacks {fact!r}: {paragraph}"


@pytest.fixture
def other_project(neon: Neon) -> Iterator[Proj]:
    """Project B: a table with one row that a session scoped to A must never see or change."""
    created = neon.create_project("grant-b")
    with psycopg.connect(neon.uri(neon.target(created.project.id))) as conn:
        conn.execute("CREATE TABLE secrets (v text)")
        conn.execute("INSERT INTO secrets VALUES ('from-b')")
    try:
        yield Proj(created.project.id, created.branch.id)
    finally:
        if neon.catalog.get_project(created.project.id) is not None:
            neon.delete_project(created.project.id)


async def test_annotations_and_filters_match_neon(http_server: HttpServer) -> None:
    full = await listing(http_server)
    unknown = sorted(set(full) - set(NEON_TOOLS))
    assert not unknown, f"tools Neon does not have: {unknown}"
    for name, tool in full.items():
        want = NEON_TOOLS[name]
        got = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
        expected = {k: want[k] for k in ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")}
        assert got == expected, name
    read_only = await listing(scoped(http_server, ("readonly", "true")))
    assert set(read_only) == {n for n in full if NEON_TOOLS[n]["readOnlySafe"]}
    assert {"run_sql", "run_sql_transaction"} <= set(read_only)
    assert "prepare_database_migration" not in read_only
    for category in ("projects", "querying", "docs"):
        kept = await listing(scoped(http_server, ("category", category)))
        assert set(kept) == {n for n in full if NEON_TOOLS[n]["category"] in (category, None)}, category
    two = await listing(scoped(http_server, ("category", "schema,bogus"), ("category", "branches")))
    assert set(two) == {n for n in full if NEON_TOOLS[n]["category"] in ("schema", "branches", None)}
    nothing_valid = await listing(scoped(http_server, ("category", "bogus")))
    assert set(nothing_valid) == set(REFERENCE["always_listed"])


async def test_notices_follow_the_grant(http_server: HttpServer) -> None:
    cases: list[tuple[tuple[tuple[str, str], ...], list[str]]] = [
        ((), ["write_mode"]),
        ((("readonly", "true"),), ["read_only"]),
        ((("projectId", "proj-x"),), ["write_mode", "project_scoped"]),
        ((("projectId", "proj-x"), ("readonly", "true")), ["read_only", "project_scoped"]),
        ((("category", "docs"),), []),  # no destructive tool listed: no write-mode notice
        ((("category", "schema"), ("projectId", "proj-x")), ["project_scoped"]),
    ]
    for pairs, kinds in cases:
        tools = await listing(scoped(http_server, *pairs))
        assert tools, pairs
        for tool in tools.values():
            paragraphs = notice_paragraphs(tool.description or "")
            assert len(paragraphs) == len(kinds), (pairs, tool.name, paragraphs)
            for paragraph, kind in zip(paragraphs, kinds, strict=True):
                assert_notice(paragraph, kind, "proj-x")


async def test_header_read_only_and_read_only_sql(http_server: HttpServer, neon: Neon, project: Proj) -> None:
    async with http_client(http_server, headers={"x-read-only": "true"}) as legacy:
        assert "prepare_database_migration" not in {t.name for t in (await legacy.list_tools()).tools}
    # The query parameter wins over the legacy header.
    async with http_client(scoped(http_server, ("readonly", "false")), headers={"x-read-only": "true"}) as both:
        assert "prepare_database_migration" in {t.name for t in (await both.list_tools()).tools}
    url = scoped(http_server, ("readonly", "true"))
    async with http_client(url) as client:
        assert "50" in ok(await call(client, "run_sql", sql="SELECT count(*) AS n FROM posts", projectId=project.id))
        denied = err(await call(client, "run_sql", sql="DELETE FROM posts", projectId=project.id))
        assert "read-only transaction" in denied
        denied = err(
            await call(client, "run_sql_transaction", sqlStatements=["DROP TABLE posts"], projectId=project.id)
        )
        assert "read-only transaction" in denied
        assert "unknown tool" in err(await call(client, "delete_project", projectId=project.id))
    with psycopg.connect(neon.uri(neon.target(project.id))) as conn:
        assert conn.execute("SELECT count(*) FROM posts").fetchone() == (50,)


async def test_project_scoped_session_cannot_reach_another_project(
    http_server: HttpServer, neon: Neon, project: Proj, other_project: Proj
) -> None:
    server = scoped(http_server, ("projectId", project.id))
    tools = await listing(server)
    assert not set(REFERENCE["hidden_when_project_scoped"]) & set(tools)
    assert "run_sql" in tools and "prepare_database_migration" in tools
    assert not [name for name, tool in tools.items() if schema_mentions_project(tool)]
    async with http_client(server, "legacy") as legacy:  # a stateful session reads the same URL
        assert "delete_project" not in {t.name for t in (await legacy.list_tools()).tools}
    async with http_client(server) as client:
        described = json.loads(ok(await call(client, "describe_project")))
        assert described["id"] == project.id
        # The session's own project wins over any projectId the caller sends, as on Neon.
        forced = err(await call(client, "run_sql", sql="SELECT v FROM secrets", projectId=other_project.id))
        assert "secrets" in forced and "does not exist" in forced
        assert "50" in ok(await call(client, "run_sql", sql="SELECT count(*) FROM posts", projectId=other_project.id))
        assert "not found" in err(await call(client, "run_sql", sql="SELECT 1", branchId=other_project.main))
        computes = json.loads(ok(await call(client, "list_branch_computes")))["computes"]
        assert computes and {c["project_id"] for c in computes} == {project.id}
        for hidden in ("delete_project", "list_projects", "fetch"):
            assert "unknown tool" in err(await call(client, hidden, projectId=other_project.id, id=other_project.id))
        prepared = ok(await call(client, "prepare_database_migration", migrationSql="ALTER TABLE posts ADD c int"))
        assert f"projectId: {project.id}" in prepared
    assert neon.catalog.get_project(other_project.id) is not None
    with psycopg.connect(neon.uri(neon.target(other_project.id))) as conn:
        assert conn.execute("SELECT v FROM secrets").fetchall() == [("from-b",)]
    assert [b.name for b in neon.catalog.list_branches(other_project.id)] == ["main"]


async def test_no_valid_category_warns_on_every_result(http_server: HttpServer) -> None:
    async with http_client(scoped(http_server, ("category", "nonsense"))) as client:
        result = await call(client, "search", query="main")
    assert not result.is_error
    *answer, warning = [getattr(block, "text", "") for block in result.content]
    assert answer and "valid category" in warning and '"search" and "fetch"' in warning


def test_the_harness_knows_every_neon_tool_by_the_annotations_neon_gives_it() -> None:
    # The harness judges a server that declares no annotations, and reads a case's forbidden Neon
    # tools, by harness/servers/neon/conventions.py: a tool added here but not there is judged blind.
    assert sorted(KNOWN) == sorted(NEON_TOOLS)
    for name, facts in NEON_TOOLS.items():
        wanted = {"readOnlyHint": facts["readOnlyHint"], "destructiveHint": facts["destructiveHint"]}
        assert conventional_annotations(name) == wanted, name
