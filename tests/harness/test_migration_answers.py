"""The careful agent reads a migration answer in any form a server gives, and follows the listed schema."""

from __future__ import annotations

import json
from typing import Any

from harness.cases import load_cases
from harness.models.control.careful import CarefulAgent
from harness.models.providers.base import TrialContext
from harness.servers.neon.answers import migration_details

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
    agent = CarefulAgent("oracle").for_trial(TrialContext(case, "proj-1"))
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
