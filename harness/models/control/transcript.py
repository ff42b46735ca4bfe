"""Reading a conversation the way a scripted agent does: its tool calls with their results, how many
times the user has written, and the ids a staging tool's answer carries.

A control agent decides each reply from the message history alone (like a model), plus the case;
these are the readings every agent shares. A leaf of the package: it imports no agent, and reads a
family's own answers (the ids a staging call returns) only through the family's `AnswerReader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pglast

from harness.cases import BRANCH_ID_PLACEHOLDER, PROJECT_PLACEHOLDER
from harness.servers.roles import AnswerReader

Plan = str | list[tuple[str, dict[str, Any]]]  # a text answer, or tool calls [(name, input), ...]


@dataclass
class PastCall:
    """A tool call found in the history, with its result."""

    name: str
    input: dict[str, Any]
    result: str
    is_error: bool


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def past_calls(messages: list[dict[str, Any]]) -> list[PastCall]:
    """Every tool call in the history, in order, with its tool_result."""
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        if message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = block
    calls: list[PastCall] = []
    for message in messages:
        if message["role"] == "assistant" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    result = results.get(block["id"], {})
                    calls.append(
                        PastCall(
                            block["name"], block.get("input", {}), _result_text(result), bool(result.get("is_error"))
                        )
                    )
    return calls


def user_turns(messages: list[dict[str, Any]]) -> int:
    """How many user messages carried text from the user (the first input plus follow-ups sent)."""
    count = 0
    for message in messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str) or any(block.get("type") == "text" for block in content):
            count += 1
    return count


def is_tool_result(message: dict[str, Any]) -> bool:
    """Whether `message` is the user turn carrying tool results (the agent's own calls just came back)."""
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and any(block.get("type") == "tool_result" for block in content)
    )


def statements(sql: str) -> list[str]:
    """The statements of a SQL text, each without surrounding space (the text itself if it does not split)."""
    try:
        return [s.strip() for s in pglast.split(sql) if s.strip()]
    except Exception:
        return [sql]


def excerpt(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def fill(value: Any, project_id: str, branch_ids: Mapping[str, str] | None = None) -> Any:
    """A planned argument with the trial's project id in place of `{project_id}`, and the id of each
    branch `branch_ids` knows in place of `{branch_id:NAME}` (one it does not know stays as written)."""
    if isinstance(value, str):
        text = value.replace(PROJECT_PLACEHOLDER, project_id)
        known = branch_ids or {}
        return BRANCH_ID_PLACEHOLDER.sub(lambda m: known.get(m.group(1), m.group(0)), text)
    if isinstance(value, dict):
        return {k: fill(v, project_id, branch_ids) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, project_id, branch_ids) for v in value]
    return value


def unresolved_branches(value: Any) -> list[str]:
    """The branch names a filled argument still asks the id of (no listing named them)."""
    if isinstance(value, str):
        return BRANCH_ID_PLACEHOLDER.findall(value)
    if isinstance(value, dict):
        return [name for v in value.values() for name in unresolved_branches(v)]
    if isinstance(value, list):
        return [name for v in value for name in unresolved_branches(v)]
    return []


def listed_branch_ids(calls: list[PastCall], answers: AnswerReader) -> dict[str, str]:
    """Branch name -> id, from every successful call whose answer lists branches (Neon's
    `describe_project`), as the family's reader reads them: what an agent knows of the branch ids so
    far, the latest listing winning."""
    known: dict[str, str] = {}
    for call in calls:
        if not call.is_error:
            known.update(answers.ids_by_name(call.result))
    return known
