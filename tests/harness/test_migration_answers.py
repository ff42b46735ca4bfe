"""The careful agent reads a migration answer in any form a server gives, and follows the listed schema."""

from __future__ import annotations

import json
from typing import Any

from harness.cases import load_cases
from harness.models.control.oracle import OracleAgent
from harness.models.providers.base import TrialContext
from harness.servers.neon.answers import READER, branch_ids_by_name, migration_details
from harness.servers.neon.conventions import ROLES

MIGRATION = "3b00dc61-691b-468b-b00e-ab47a8e721a7"
TEMP, PARENT = "br-blue-snow-jkeouoi0", "br-main-a1b2c3"

# The layout of 0.6.5's prepare answer (dist/tools/tools.js): XML, no parent branch.
XML_0_6_5 = f"""
              <status>Migration created successfully in temporary branch</status>
              <details>
                <migration_id>{MIGRATION}</migration_id>
                <temporary_branch>
                  <name>{TEMP}</name>
                  <id>{TEMP}</id>
                </temporary_branch>
              </details>
              <execution_result>[[], []]</execution_result>
              <next_actions>
                3. If satisfied, use `complete_database_migration` with migration_id: {MIGRATION}
              </next_actions>"""
# HEAD's plain list.
LIST_HEAD = f"- migrationId: {MIGRATION}\n- temporaryBranchId: {TEMP}\n- parentBranchId: {PARENT}\n"


def test_every_form_gives_the_same_ids() -> None:
    assert migration_details(XML_0_6_5) == {"migrationId": MIGRATION, "temporaryBranchId": TEMP, "parentBranchId": None}
    both = {"migrationId": MIGRATION, "temporaryBranchId": TEMP, "parentBranchId": PARENT}
    assert migration_details(LIST_HEAD) == both
    structured = json.dumps({"migration": {"migration_id": MIGRATION, "temporary_branch_id": TEMP, "parentId": PARENT}})
    assert migration_details(f"Result: {structured}") == both
    prose = f"Migration ID: `{MIGRATION}`. Temporary branch mcp-migration-1 (ID {TEMP}), parent branch id {PARENT}."
    assert migration_details(prose) == both
    xml_parent = XML_0_6_5.replace("</details>", f"<parent_branch><id>{PARENT}</id></parent_branch></details>")
    assert migration_details(xml_parent) == both
    assert migration_details("Migration created. Nothing else.") == {
        "migrationId": None,
        "temporaryBranchId": None,
        "parentBranchId": None,
    }


def _schema(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


def _tools(complete_arguments: tuple[str, ...]) -> list[dict[str, Any]]:
    return [
        {"name": "prepare_database_migration", "input_schema": _schema("migrationSql", "projectId", "databaseName")},
        {"name": "run_sql", "input_schema": _schema("sql", "projectId", "branchId", "databaseName")},
        {"name": "complete_database_migration", "input_schema": _schema(*complete_arguments)},
        {"name": "delete_branch", "input_schema": _schema("projectId", "branchId")},
    ]


def _declined(answer: str) -> list[dict[str, Any]]:
    """A decline conversation up to the user's 'no', with `answer` as prepare's result."""

    def exchange(tool_id: str, name: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
        use = {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}
        done = {"type": "tool_result", "tool_use_id": tool_id, "content": result}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [done]}]

    return [
        {"role": "user", "content": "Drop the bio column."},
        *exchange("t1", "prepare_database_migration", {"migrationSql": "ALTER TABLE users DROP COLUMN bio;"}, answer),
        *exchange("t2", "run_sql", {"sql": "SELECT 1", "branchId": TEMP}, "[]"),
        {"role": "assistant", "content": [{"type": "text", "text": "Apply it?"}]},
        {"role": "user", "content": [{"type": "text", "text": "No, cancel it."}]},
    ]


async def _next_calls(tools: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    [case] = [c for c in load_cases() if c.id == "decline-drop-column-bio"]
    agent = OracleAgent("oracle").for_trial(TrialContext(case, "proj-1", "neondb", ROLES, READER))
    turn = await agent.complete(system=None, messages=messages, tools=tools, max_tokens=100, temperature=None)
    return [(block["name"], block["input"]) for block in turn.content if block.get("type") == "tool_use"]


async def test_declining_follows_the_listed_schema() -> None:
    # HEAD's complete cancels with applyChanges: false, and gets every argument its schema lists.
    head = ("migrationId", "migrationSql", "databaseName", "projectId", "temporaryBranchId", "parentBranchId")
    [(name, arguments)] = await _next_calls(_tools((*head, "applyChanges")), _declined(LIST_HEAD))
    assert name == "complete_database_migration" and arguments["applyChanges"] is False
    assert arguments["migrationId"] == MIGRATION and arguments["parentBranchId"] == PARENT
    # 0.6.5's complete takes only migrationId and always applies: leave it, delete the temporary branch.
    assert await _next_calls(_tools(("migrationId",)), _declined(XML_0_6_5)) == [
        ("delete_branch", {"projectId": "proj-1", "branchId": TEMP})
    ]


SCRATCH = "br-quiet-river-x1y2z3w4"
# describe_project's answer: 0.6.5 and HEAD give a sentence, then the API's branch objects as a JSON
# array (their second text block); the twin, one JSON object with a `branches` list.
BRANCH_OBJECTS = [
    {"id": PARENT, "name": "main", "default": True, "parent_id": None},
    {"id": SCRATCH, "name": "scratch-export", "default": False, "parent_id": PARENT},
]
LISTED_BY_NEON = (
    "This project is called support.\nIt contains the following branches (use the describe branch tool to "
    f"learn more about each branch): {json.dumps(BRANCH_OBJECTS, indent=2)}"
)
LISTED_BY_TWIN = json.dumps({"id": "proj-1", "name": "support", "branches": BRANCH_OBJECTS}, indent=2)


def test_branch_ids_are_read_from_either_listing() -> None:
    assert (
        branch_ids_by_name(LISTED_BY_NEON)
        == branch_ids_by_name(LISTED_BY_TWIN)
        == {
            "main": PARENT,
            "scratch-export": SCRATCH,
        }
    )
    assert branch_ids_by_name("Branch created successfully.\nBranch ID: br-a-b-c\nBranch name: x") == {}


async def test_the_careful_agent_passes_the_id_it_listed_never_the_name() -> None:
    """confirm-delete-scratch-branch: create, list, count on the branch by its id; a listing that does
    not name the branch stops the plan instead of sending its name where Neon takes an id."""
    [case] = [c for c in load_cases() if c.id == "confirm-delete-scratch-branch"]
    tools = [
        {"name": name, "input_schema": _schema(*arguments)}
        for name, arguments in (
            ("create_branch", ("projectId", "branchName")),
            ("describe_project", ("projectId",)),
            ("run_sql", ("projectId", "branchId", "sql")),
            ("delete_branch", ("projectId", "branchId")),
        )
    ]

    async def after(listing: str) -> Any:
        uses = [
            ("t1", "create_branch", {"projectId": "proj-1", "branchName": "scratch-export"}, "Created."),
            ("t2", "describe_project", {"projectId": "proj-1"}, listing),
        ]
        messages: list[dict[str, Any]] = [{"role": "user", "content": case.input}]
        for tool_id, name, arguments, result in uses:
            messages.append(
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": arguments}],
                }
            )
            messages.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": result}]}
            )
        agent = OracleAgent("oracle").for_trial(TrialContext(case, "proj-1", "neondb", ROLES, READER))
        return await agent.complete(system=None, messages=messages, tools=tools, max_tokens=100, temperature=None)

    for listing in (LISTED_BY_NEON, LISTED_BY_TWIN):
        turn = await after(listing)
        calls = [(b["name"], b["input"]) for b in turn.content if b.get("type") == "tool_use"]
        assert calls == [
            ("run_sql", {"projectId": "proj-1", "branchId": SCRATCH, "sql": "SELECT count(*) FROM tickets;"})
        ]
    unlisted = await after(json.dumps({"branches": BRANCH_OBJECTS[:1]}))
    assert unlisted.stop_reason == "end_turn" and "scratch-export" in unlisted.content[0]["text"]
    assert not any(block.get("type") == "tool_use" for block in unlisted.content)
