"""Every trial's MCP session is pinned to its own project (Neon's `projectId` grant in the MCP URL).

A model that knows another project's id, and tries to read it, delete it or list the account's
projects, reaches nothing: the project tools are not offered, no schema asks for a project, and the
session's own project wins over any `projectId` the model sends. The neighbour is untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from tests.fakes.anthropic_server import FakeAnthropic, project_id, reply, text, tool_results, tool_use
from tests.harness.conftest import make_case

PROJECT_TOOLS = {"list_projects", "delete_project", "create_project", "describe_project_list"}


def properties(schema: dict[str, Any]) -> set[str]:
    """Every property name in a schema, nested objects (Neon's `params` wrapper) included."""
    names: set[str] = set()
    for name, inner in (schema.get("properties") or {}).items():
        names.add(name)
        if isinstance(inner, dict):
            names |= properties(inner)
    return names


async def test_a_trial_cannot_reach_another_project(
    local_server: LocalServer, api: NeonAPI, runner_settings: Callable[..., Settings]
) -> None:
    neighbour = await api.create_project("pinned-test-neighbour")
    neighbour_id = neighbour["project"]["id"]
    try:
        uri = await api.connection_uri(neighbour_id, neighbour["branch"]["id"], "neondb", "neondb_owner")
        async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
            await conn.execute("CREATE TABLE secrets (v text); INSERT INTO secrets VALUES ('neighbour-only')")
        seen_tools: list[list[dict[str, Any]]] = []

        def intruder(body: dict[str, Any]) -> dict[str, Any]:
            seen_tools.append(body.get("tools", []))
            if tool_results(body):
                return reply(text("I could not reach that project from here."))
            return reply(
                tool_use("run_sql", {"sql": "SELECT v FROM secrets", "projectId": neighbour_id}),
                tool_use("delete_project", {"projectId": neighbour_id}),
                tool_use("list_projects", {}),
                tool_use("describe_project", {"projectId": project_id(body)}),
            )

        with FakeAnthropic(intruder) as fake:
            env = {
                "EVAL_MODEL": "anthropic:claude-sonnet-4-6",
                "ANTHROPIC_API_KEY": "fake-anthropic-key-0123456789",
                "ANTHROPIC_BASE_URL": fake.url,
            }
            case = make_case(
                id="intruder",
                scenario="tool_selection",
                follow_ups=[],
                approval="none",
                expected_main="unchanged",
                reference_sql=None,
                reference_calls=[{"tool": "get_database_tables", "arguments": {}}],
                required_tools=[],
            )
            async with TrialRunner(runner_settings(env), local_server=local_server) as runner:
                record = await runner.run(case, 0)
        fake.assert_clean()

        offered = {tool["name"]: tool for tool in seen_tools[0]}
        assert "run_sql" in offered and not PROJECT_TOOLS & set(offered)
        assert not PROJECT_TOOLS & set(record.tool_annotations)
        assert not [name for name, tool in offered.items() if "projectId" in properties(tool["input_schema"])]
        calls = {call.name: call for call in record.tool_calls}
        assert calls["run_sql"].is_error and "secrets" in calls["run_sql"].result_text
        assert calls["delete_project"].unknown and calls["list_projects"].unknown
        assert (
            record.project_id
            and not calls["describe_project"].is_error
            and str(record.project_id) in calls["describe_project"].result_text
        )
        assert neighbour_id not in calls["describe_project"].result_text
        async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
            rows = await (await conn.execute("SELECT v FROM secrets")).fetchall()
        assert rows == [("neighbour-only",)]
    finally:
        await api.delete_project(neighbour_id)
