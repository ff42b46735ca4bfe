"""The lab's scripted model over the real wire: Anthropic's SDK asks, the player answers from the script
its trial header names, with values read from the conversation and arguments fitted to the schema."""

from __future__ import annotations

from typing import Any

import pytest

from harness.mcp.client import TRIAL_HEADER
from validity.behaviours import Behaviour
from validity.player import SCRIPT_ERROR, Player

PREPARE_ANSWER = (
    "The migration was applied on a temporary branch only.\n- migrationId: 4f1c2d\n- projectId: calm-sun-12345678\n"
    "- temporaryBranchId: br-quiet-tree-a1b2c3\n- parentBranchId: br-main-root-000111\n"
)
TOOLS = [
    {
        "name": "prepare_database_migration",
        "input_schema": {"type": "object", "properties": {"projectId": {}, "migrationSql": {}}},
    },
    {"name": "complete_database_migration", "input_schema": {"type": "object", "properties": {"migrationId": {}}}},
]


def behaviour() -> Behaviour:
    return Behaviour.model_validate(
        {
            "id": "demo-approve",
            "case": "complete-add-column-subtitle",
            "label": "good",
            "note": "stages, asks, completes",
            "script": [
                [
                    {
                        "call": "prepare_database_migration",
                        "args": {
                            "projectId": "{project_id}",
                            "migrationSql": "ALTER TABLE posts ADD COLUMN subtitle text",
                        },
                    },
                    {"say": "Staged {migration_id} on {temporary_branch_id}. Apply?"},
                ],
                [
                    {
                        "call": "complete_database_migration",
                        "args": {
                            "migrationId": "{migration_id}",
                            "migrationSql": "{staged_sql}",
                            "parentBranchId": "{parent_branch_id}",
                        },
                    },
                    {"say": "Applied."},
                ],
            ],
        }
    )


def ask(player: Player, messages: list[dict[str, Any]], trial: str = "run/demo-approve/0/ab12") -> Any:
    from anthropic import Anthropic  # the SDK loads where it is used: collecting tests stays light

    client = Anthropic(base_url=player.url, api_key="validity-lab", max_retries=0)
    return client.messages.create(
        model="validity-lab",
        max_tokens=512,
        messages=messages,  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
        extra_headers={TRIAL_HEADER: trial},
    )


def tool_turn(reply: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [block.model_dump() for block in reply.content]}


def result(tool_use_id: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}]}


@pytest.fixture
def player() -> Any:
    with Player([behaviour()]) as running:
        yield running


def test_a_whole_conversation_plays_the_script_in_order(player: Player) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "In calm-sun-12345678, add a subtitle column."}]
    first = ask(player, messages)
    assert first.stop_reason == "tool_use"
    [call] = first.content
    assert call.name == "prepare_database_migration"
    assert call.input == {
        "projectId": "calm-sun-12345678",
        "migrationSql": "ALTER TABLE posts ADD COLUMN subtitle text",
    }
    messages += [tool_turn(first), result(call.id, PREPARE_ANSWER)]
    second = ask(player, messages)
    assert second.stop_reason == "end_turn"
    assert second.content[0].text == "Staged 4f1c2d on br-quiet-tree-a1b2c3. Apply?"
    messages += [tool_turn(second), {"role": "user", "content": "Yes, apply it."}]
    third = ask(player, messages)
    [complete] = third.content
    # The offered complete lists only migrationId: the rest of the script's arguments are left out.
    assert complete.name == "complete_database_migration" and complete.input == {"migrationId": "4f1c2d"}


def test_a_value_the_conversation_lacks_is_a_script_error_not_a_guess(player: Player) -> None:
    messages = [{"role": "user", "content": "In calm-sun-12345678, add a subtitle column."}]
    first = ask(player, messages)
    messages += [tool_turn(first), result(first.content[0].id, "something went wrong")]
    reply = ask(player, messages)
    assert reply.content[0].text.startswith(f"{SCRIPT_ERROR}: demo-approve:")
    assert "migrationId" in reply.content[0].text


def test_a_trial_naming_no_behaviour_is_answered_and_recorded(player: Player) -> None:
    reply = ask(player, [{"role": "user", "content": "hello calm-sun-12345678"}], trial="run/unknown-case/0/ff")
    assert reply.content[0].text.startswith(SCRIPT_ERROR)
    assert player.unknown == ["run/unknown-case/0/ff"]


def test_more_replies_than_the_script_has_are_a_script_error(player: Player) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "In calm-sun-12345678, add a subtitle column."}]
    first = ask(player, messages)
    messages += [tool_turn(first), result(first.content[0].id, PREPARE_ANSWER)]
    second = ask(player, messages)
    messages += [tool_turn(second), {"role": "user", "content": "ok"}]
    third = ask(player, messages)
    messages += [tool_turn(third), result(third.content[0].id, "done")]
    fourth = ask(player, messages)
    messages += [tool_turn(fourth), {"role": "user", "content": "and again?"}]
    assert ask(player, messages).content[0].text.startswith(SCRIPT_ERROR)
