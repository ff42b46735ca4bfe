"""The MCP server: tool listing and dispatch on the low-level ``mcp.server.Server``.

The low-level server (rather than ``MCPServer`` decorators) lets the input schemas and the
descriptions come from our specs and the YAML file instead of Python signatures, and lets one
flag switch every tool between Neon's wrapped arguments (``{"params": {...}}``) and flat ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import psycopg
from jsonschema import Draft202012Validator
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from localneon.branching import Neon
from localneon.errors import LocalNeonError
from localneon.texts import ToolText, load_texts
from localneon.tools import ToolSpec, all_tools

log = logging.getLogger("localneon")
SERVER_NAME = "localneon"
INSTRUCTIONS = (
    "Local Neon-compatible Postgres server. Projects contain branches; each branch is an independent "
    "copy of its parent's databases. Try schema changes with prepare_database_migration and apply "
    "them with complete_database_migration only after the user approves."
)


@dataclass(frozen=True)
class Settings:
    """How the tools are exposed: wrapped or flat arguments, and which descriptions."""

    flat_params: bool = False
    descriptions: str | None = None


def inner_schema(spec: ToolSpec, text: ToolText) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for param in spec.params:
        schema = dict(param.schema)
        if param.name in text.params:
            schema["description"] = text.params[param.name]
        properties[param.name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    required = [p.name for p in spec.params if p.required]
    if required:
        result["required"] = required
    return result


def input_schema(spec: ToolSpec, text: ToolText, flat: bool) -> dict[str, Any]:
    inner = inner_schema(spec, text)
    if flat:
        return inner
    return {"type": "object", "properties": {"params": inner}, "required": ["params"]}


class ToolRegistry:
    """Specs, texts and schemas for one server configuration."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        texts = load_texts(settings.descriptions)
        self.specs = {spec.name: spec for spec in all_tools()}
        unknown = sorted(set(texts) - set(self.specs))
        if unknown:
            log.warning("descriptions for unknown tools ignored: %s", ", ".join(unknown))
        self.texts = {name: texts.get(name, ToolText()) for name in self.specs}
        self.schemas = {
            name: input_schema(spec, self.texts[name], settings.flat_params) for name, spec in self.specs.items()
        }
        self.validators = {name: Draft202012Validator(schema) for name, schema in self.schemas.items()}

    def tools(self) -> list[types.Tool]:
        result = []
        for name, spec in self.specs.items():
            annotations = types.ToolAnnotations(
                title=spec.title or name.replace("_", " "),
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive if not spec.read_only else False,
                idempotent_hint=spec.idempotent or None,
                open_world_hint=False,
            )
            result.append(
                types.Tool(
                    name=name,
                    description=self.texts[name].description,
                    input_schema=self.schemas[name],
                    annotations=annotations,
                )
            )
        return result

    def arguments(self, name: str, raw: dict[str, Any] | None) -> dict[str, Any]:
        """Validate against the listed schema and unwrap ``params``; raises LocalNeonError."""
        raw = raw or {}
        errors = sorted(self.validators[name].iter_errors(raw), key=lambda e: list(e.absolute_path))
        if errors:
            details = "; ".join(
                f"{'/'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}" for e in errors[:5]
            )
            shape = "flat arguments" if self.settings.flat_params else 'arguments wrapped as {"params": {...}}'
            raise LocalNeonError(f"invalid arguments for {name} (this server expects {shape}): {details}")
        if self.settings.flat_params:
            return dict(raw)
        return dict(raw["params"])


def _text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def build_server(neon: Neon, settings: Settings) -> Server[Any]:
    """A low-level MCP server exposing every tool against ``neon``."""
    registry = ToolRegistry(settings)

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=registry.tools())

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = registry.specs.get(params.name)
        if spec is None:
            return _text_result(f"unknown tool {params.name!r}", error=True)
        try:
            args = registry.arguments(params.name, params.arguments)
            text = await anyio.to_thread.run_sync(spec.handler, neon, args)
            return _text_result(text)
        except LocalNeonError as exc:
            return _text_result(f"{params.name}: {exc.message}", error=True)
        except psycopg.Error as exc:
            return _text_result(f"{params.name}: PostgreSQL error: {str(exc).strip()}", error=True)
        except Exception as exc:
            log.exception("tool %s failed", params.name)
            return _text_result(f"{params.name}: internal error: {type(exc).__name__}: {exc}", error=True)

    def tool_schema(name: str) -> dict[str, Any] | None:
        return registry.schemas.get(name)

    return Server(
        SERVER_NAME,
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=tool_schema,
    )


async def sweep_expired_branches(neon: Neon, interval: float = 30.0) -> None:
    """Background job: delete branches past their ``expires_at``, like Neon's cleanup does."""
    while True:
        try:
            deleted = await anyio.to_thread.run_sync(neon.delete_expired_branches)
            if deleted:
                log.info("deleted expired branches: %s", ", ".join(deleted))
        except Exception:
            log.exception("expired-branch sweep failed")
        await anyio.sleep(interval)
