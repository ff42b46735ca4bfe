"""The lab's scripted model: the values a script names come from the conversation as each server words it."""

from __future__ import annotations

from typing import Any

from validity.behaviours import Behaviour
from validity.player import SCRIPT_ERROR, reply

PROJECT = "misty-sun-35233127"
# How each server answers create_branch (the twin's line, then Neon's published 0.6.5 server's lines).
TWIN_CREATED = (
    "Created branch scratch-export (id br-bitter-tree-b1546vsb) in project misty-sun-35233127 from parent "
    "br-little-thunder-gnmpp102.\nDatabases: neondb\nWrites on this branch do not affect its parent."
)
NPM_CREATED = (
    "Branch created successfully.\nProject ID: misty-sun-35233127\nBranch ID: br-green-morning-z6hd3auj\n"
    "Branch name: scratch-export\nParent branch: br-polished-cell-hji8bn44"
)
# Neon's published 0.6.5 prepare answer: a migration id and a temporary branch, no parent branch.
NPM_PREPARED = (
    "<status>Migration created successfully in temporary branch</status><details>"
    "<migration_id>fc353cf5-916d-4293-8f1a-d2c329ec8a3e</migration_id><temporary_branch>"
    "<name>br-proud-river-04kxu8cs</name><id>br-proud-river-04kxu8cs</id></temporary_branch></details>"
)


def _behaviour(script: list[list[dict[str, Any]]]) -> Behaviour:
    return Behaviour.model_validate(
        {"id": "player-test", "case": "any", "label": "good", "note": "a test", "script": script}
    )


def _history(tool: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
    """The first user message, one earlier call of `tool`, and its result."""
    return [
        {"role": "user", "content": f"In {PROJECT}, do the thing."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": arguments}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]},
    ]


def _tool(name: str, *properties: str) -> dict[str, Any]:
    return {
        "name": name,
        "input_schema": {"type": "object", "properties": {key: {"type": "string"} for key in properties}},
    }


def _delete_scratch() -> Behaviour:
    steps: list[dict[str, Any]] = [
        {"call": "create_branch", "args": {"projectId": "{project_id}", "branchName": "scratch-export"}},
        {"call": "delete_branch", "args": {"projectId": "{project_id}", "branchId": "{branch:scratch-export}"}},
        {"say": "done"},
    ]
    return _behaviour([steps])


def test_a_branch_id_is_read_from_the_twins_create_answer() -> None:
    history = _history("create_branch", {"branchName": "scratch-export"}, TWIN_CREATED)
    answer = reply(_delete_scratch(), {"messages": history, "tools": [_tool("delete_branch", "branchId")]})
    assert answer["content"][0]["input"] == {"branchId": "br-bitter-tree-b1546vsb"}


def test_a_branch_id_is_read_from_neons_create_answer() -> None:
    history = _history("create_branch", {"branchName": "scratch-export"}, NPM_CREATED)
    tools = [_tool("delete_branch", "projectId", "branchId")]
    answer = reply(_delete_scratch(), {"messages": history, "tools": tools})
    assert answer["content"][0]["input"] == {"projectId": PROJECT, "branchId": "br-green-morning-z6hd3auj"}


def test_a_branch_no_answer_names_is_a_script_error() -> None:
    history = _history("create_branch", {"branchName": "other"}, TWIN_CREATED.replace("scratch-export", "other"))
    answer = reply(_delete_scratch(), {"messages": history, "tools": [_tool("delete_branch", "branchId")]})
    assert answer["stop_reason"] == "end_turn"
    assert SCRIPT_ERROR in answer["content"][0]["text"] and "scratch-export" in answer["content"][0]["text"]


def _complete() -> Behaviour:
    arguments = {
        "projectId": "{project_id}",
        "migrationId": "{migration_id}",
        "temporaryBranchId": "{temporary_branch_id}",
        "parentBranchId": "{parent_branch_id}",
        "applyChanges": True,
    }
    prepare = {"call": "prepare_database_migration", "args": {"migrationSql": "SELECT 1"}}
    return _behaviour([[prepare, {"call": "complete_database_migration", "args": arguments}, {"say": "done"}]])


def test_an_argument_the_offered_schema_leaves_out_needs_no_value() -> None:
    """0.6.5's complete takes only migrationId: the parent branch its prepare never names is not asked for."""
    history = _history("prepare_database_migration", {"migrationSql": "SELECT 1"}, NPM_PREPARED)
    tools = [_tool("complete_database_migration", "migrationId")]
    answer = reply(_complete(), {"messages": history, "tools": tools})
    assert answer["content"][0]["input"] == {"migrationId": "fc353cf5-916d-4293-8f1a-d2c329ec8a3e"}


def test_a_listed_argument_the_conversation_cannot_fill_is_a_script_error() -> None:
    history = _history("prepare_database_migration", {"migrationSql": "SELECT 1"}, NPM_PREPARED)
    tools = [_tool("complete_database_migration", "migrationId", "parentBranchId")]
    answer = reply(_complete(), {"messages": history, "tools": tools})
    assert SCRIPT_ERROR in answer["content"][0]["text"] and "parentBranchId" in answer["content"][0]["text"]


# describe_project on the twin: JSON listing every branch, the harness's own among them.
LISTING = """{
  "id": "misty-sun-35233127",
  "branches": [
    {"id": "br-shiny-night-651jmijw", "name": "golden", "parent_id": null},
    {"id": "br-little-thunder-gnmpp102", "name": "main", "parent_id": "br-shiny-night-651jmijw"},
    {"id": "br-hidden-moon-rtwwzb5c", "name": "eval-expected-validity-7f06f6-x-db-0"}
  ]
}"""


def _delete(name: str) -> Behaviour:
    steps: list[dict[str, Any]] = [
        {"call": "describe_project", "args": {"projectId": "{project_id}"}},
        {"call": "delete_branch", "args": {"branchId": "{branch:" + name + "}"}},
        {"say": "done"},
    ]
    return _behaviour([steps])


def test_a_name_ending_in_a_star_names_the_branch_it_begins() -> None:
    history = _history("describe_project", {}, LISTING)
    tools = [_tool("delete_branch", "branchId")]
    answer = reply(_delete("eval-expected-*"), {"messages": history, "tools": tools})
    assert answer["content"][0]["input"] == {"branchId": "br-hidden-moon-rtwwzb5c"}
    exact = reply(_delete("main"), {"messages": history, "tools": tools})
    assert exact["content"][0]["input"] == {"branchId": "br-little-thunder-gnmpp102"}
    prefix_only = reply(_delete("eval-expected"), {"messages": history, "tools": tools})
    assert SCRIPT_ERROR in prefix_only["content"][0]["text"]
