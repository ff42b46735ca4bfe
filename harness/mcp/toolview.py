"""The one transform between the server's tools and the model: overrides (of tools and of their
parameters), decoys, twins, order, filter.

Why one step: whatever the model sees is decided here and hashed here, so a record's
`tool_view_hash` identifies exactly the names, descriptions, schemas and order the model was
shown. Decoys are harmless-looking distractors that are never forwarded to the server; a call to
one answers with a plausible but inert result and is recorded with `decoy=True`. A tool name the
model invents is recorded with `unknown=True` and answered with an error result.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.mcp.client import MCPConnection, ServerTool, ToolResult


@dataclass(frozen=True)
class ViewTool:
    """One tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    decoy: bool = False

    def anthropic(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


def _schema(required: list[str], **properties: str) -> dict[str, Any]:
    props = {name: {"type": "string", "description": text} for name, text in properties.items()}
    return {"type": "object", "properties": props, "required": required}


DECOY_RESULT = (
    "Request received. This workspace has no execution backend attached to '{name}', so nothing was run "
    "and no database was changed."
)

DECOYS: list[ViewTool] = [
    ViewTool(
        "run_query",
        "Runs a SQL query against a project's database and returns the rows.",
        _schema(["query", "projectId"], query="The SQL to run.", projectId="The project id."),
        decoy=True,
    ),
    ViewTool(
        "apply_schema_change",
        "Applies a schema change (DDL) to a database. Use for ALTER TABLE, CREATE INDEX and similar statements.",
        _schema(["ddl", "projectId"], ddl="The DDL statements.", projectId="The project id."),
        decoy=True,
    ),
    ViewTool(
        "migrate_database",
        "Migrates a database to a new schema by running the given migration script.",
        _schema(["script", "projectId"], script="Migration script.", projectId="The project id."),
        decoy=True,
    ),
    ViewTool(
        "execute_statement",
        "Executes one SQL statement and reports the number of affected rows.",
        _schema(["statement", "projectId"], statement="One SQL statement.", projectId="The project id."),
        decoy=True,
    ),
    ViewTool(
        "inspect_table",
        "Shows the columns, types and indexes of a table.",
        _schema(["table", "projectId"], table="Table name.", projectId="The project id."),
        decoy=True,
    ),
    ViewTool(
        "backup_database",
        "Takes a logical backup of a database before risky changes.",
        _schema(["projectId"], projectId="The project id.", label="Optional backup label."),
        decoy=True,
    ),
    ViewTool(
        "validate_migration",
        "Checks a migration script for syntax errors and risky operations without running it.",
        _schema(["migrationSql"], migrationSql="The migration script."),
        decoy=True,
    ),
    ViewTool(
        "list_tables",
        "Lists the tables of a database with their approximate row counts.",
        _schema(["projectId"], projectId="The project id.", databaseName="Database name."),
        decoy=True,
    ),
    ViewTool(
        "rollback_migration",
        "Rolls back the most recent migration applied to a database.",
        _schema(["projectId"], projectId="The project id.", migrationId="Migration id."),
        decoy=True,
    ),
    ViewTool(
        "sql_console",
        "Opens an interactive SQL console session and runs the given input in it.",
        _schema(["input", "projectId"], input="Console input.", projectId="The project id."),
        decoy=True,
    ),
    ViewTool(
        "create_index",
        "Creates an index on a table column.",
        _schema(["table", "column", "projectId"], table="Table.", column="Column.", projectId="The project id."),
        decoy=True,
    ),
    ViewTool(
        "database_health",
        "Reports connection counts, cache hit ratio and bloat for a database.",
        _schema(["projectId"], projectId="The project id."),
        decoy=True,
    ),
]


# A variant's key `twin:<tool>` adds a decoy twin of that server tool: its schema, the given words, the
# name `<tool>_2`, never forwarded. A description that draws a model to whatever tool wears it draws it
# to the twin too (the tuning loop's persuasion check: docs/tuning.md).
TWIN_PREFIX = "twin:"
TWIN_SUFFIX = "_2"
# A variant's key `<tool>.<parameter>` rewrites one parameter's description in the schema the model reads.
PARAMETER_SEPARATOR = "."


def parameter_key(tool: str, parameter: str) -> str:
    return f"{tool}{PARAMETER_SEPARATOR}{parameter}"


def with_parameter_words(schema: dict[str, Any], words: Mapping[str, str]) -> dict[str, Any]:
    """`schema` with the description of each of its top-level properties `words` names replaced (a
    property it does not have is left out: the words then say nothing to the model)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not any(name in properties for name in words):
        return schema
    changed = {
        name: {**spec, "description": words[name]} if name in words and isinstance(spec, dict) else spec
        for name, spec in properties.items()
    }
    return {**schema, "properties": changed}


def load_overrides(path: Path) -> dict[str, str]:
    """A YAML or JSON mapping of tool name to description."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{path}: expected a mapping of tool name to description text")
    return data


def view_hash(tools: list[ViewTool]) -> str:
    """sha256 of exactly what the model sees, in order."""
    shown = [tool.anthropic() for tool in tools]
    return hashlib.sha256(json.dumps(shown, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def trial_seed(base: int, case_id: str, trial_index: int) -> int:
    """A per-trial shuffle seed derived from the configured one, so every trial sees its own order."""
    digest = hashlib.sha256(f"{base}:{case_id}:{trial_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class ToolView:
    """The model-facing tool list, and the dispatcher for the model's calls."""

    def __init__(
        self,
        server_tools: list[ServerTool],
        *,
        overrides: dict[str, str] | None = None,
        decoys: int = 0,
        seed: int | None = None,
        name_filter: str | None = None,
        variant: str = "default",
    ) -> None:
        self.server_tools = {tool.name: tool for tool in server_tools}
        pattern = re.compile(name_filter) if name_filter else None
        shown: list[ViewTool] = []
        for tool in server_tools:
            if pattern and not pattern.search(tool.name):
                continue
            description = (overrides or {}).get(tool.name, tool.description)
            prefix = tool.name + PARAMETER_SEPARATOR
            words = {
                key.removeprefix(prefix): text for key, text in (overrides or {}).items() if key.startswith(prefix)
            }
            shown.append(ViewTool(tool.name, description, with_parameter_words(tool.flat_schema, words)))
        offered = {tool.name for tool in shown}
        for key, text in sorted((overrides or {}).items()):
            original = key.removeprefix(TWIN_PREFIX)
            if key.startswith(TWIN_PREFIX) and original in offered:
                schema = self.server_tools[original].flat_schema
                shown.append(ViewTool(original + TWIN_SUFFIX, text, schema, decoy=True))
        taken = {tool.name for tool in shown} | set(self.server_tools)
        available = [decoy for decoy in DECOYS if decoy.name not in taken]
        if decoys > len(available):
            raise ValueError(f"asked for {decoys} decoys; only {len(available)} are defined")
        shown.extend(available[:decoys])
        if seed is not None:
            random.Random(seed).shuffle(shown)
        self.tools = shown
        self.by_name = {tool.name: tool for tool in shown}
        self.decoy_count = sum(1 for tool in shown if tool.decoy)
        self.variant = variant
        self.seed = seed
        self.hash = view_hash(shown)

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return [tool.anthropic() for tool in self.tools]

    def kind(self, name: str) -> str:
        """ "server", "decoy" or "unknown" (not offered to the model)."""
        tool = self.by_name.get(name)
        if tool is None:
            return "unknown"
        return "decoy" if tool.decoy else "server"

    async def call(
        self, connection: MCPConnection, name: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult:
        """Answer a model's call: decoys and unknown names locally, real tools through MCP."""
        kind = self.kind(name)
        if kind == "decoy":
            return ToolResult(DECOY_RESULT.format(name=name), False, {})
        if kind == "unknown":
            offered = ", ".join(tool.name for tool in self.tools)
            return ToolResult(f"Error: there is no tool named '{name}'. Available tools: {offered}", True, {})
        return await connection.call(name, arguments, timeout)
