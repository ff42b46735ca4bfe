"""The MCP side: connect (stdio or Streamable HTTP), list every tool, call tools.

Why the wrapping logic lives here: Neon's server wraps every tool's arguments as `{"params": {...}}`
while other servers take them flat. The model is always shown the flat schema, so both server
styles look the same to it, and arguments are wrapped again on the way to a wrapping server.
"""

from __future__ import annotations

import copy
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

MAX_TOOL_PAGES = 100
TRIAL_HEADER = "X-Eval-Trial"  # names the trial on every MCP request it sends: servers ignore it, logs keep it


@dataclass(frozen=True)
class ServerTool:
    """A tool as the server lists it, plus the flat schema the model sees."""

    name: str
    description: str
    input_schema: dict[str, Any]  # as the server lists it
    flat_schema: dict[str, Any]  # what the model sees
    wrapped: bool  # the server wants {"params": {...}}
    annotations: dict[str, Any] | None = None


@dataclass
class ToolResult:
    """What a tool call returned, as text, plus what was actually forwarded."""

    text: str
    is_error: bool
    forwarded: dict[str, Any]


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        if isinstance(target, dict):
            merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            return merged
    return schema


def unwrap_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(flat schema, wrapped?): a schema whose only property is a `params` object is unwrapped."""
    properties = schema.get("properties") or {}
    if set(properties) != {"params"}:
        return copy.deepcopy(schema), False
    inner = _resolve(properties["params"], schema)
    if inner.get("type") != "object" and "properties" not in inner:
        return copy.deepcopy(schema), False
    flat = copy.deepcopy(inner)
    flat.setdefault("type", "object")
    flat.setdefault("properties", {})
    for key in ("$defs", "definitions"):
        if key in schema and key not in flat:
            flat[key] = copy.deepcopy(schema[key])
    return flat, True


def forward_arguments(tool: ServerTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """Wrap flat arguments for a wrapping server; pass through arguments already wrapped."""
    if not tool.wrapped:
        return arguments
    if set(arguments) == {"params"} and isinstance(arguments["params"], dict):
        return arguments
    return {"params": arguments}


def result_text(content: list[Any], structured: Any = None) -> str:
    """Flatten MCP content blocks to text (text blocks verbatim, others as JSON)."""
    parts: list[str] = []
    for block in content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            dump = block.model_dump(mode="json", exclude_none=True) if hasattr(block, "model_dump") else block
            parts.append(json.dumps(dump))
    if not parts and structured is not None:
        parts.append(json.dumps(structured))
    return "\n".join(parts)


class MCPConnection:
    """One connected MCP client session and its tool listing."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.tools: dict[str, ServerTool] = {}

    async def list_tools(self) -> list[ServerTool]:
        """Every tool, following pagination cursors."""
        tools: list[ServerTool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await self.client.list_tools(cursor=cursor)
            for tool in page.tools:
                flat, wrapped = unwrap_schema(dict(tool.input_schema))
                annotations = (  # MCP's own (camelCase) names, as the server sent them: destructiveHint, ...
                    tool.annotations.model_dump(mode="json", exclude_none=True, by_alias=True)
                    if tool.annotations
                    else None
                )
                tools.append(
                    ServerTool(tool.name, tool.description or "", dict(tool.input_schema), flat, wrapped, annotations)
                )
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = {tool.name: tool for tool in tools}
        return tools

    async def call(self, name: str, arguments: dict[str, Any], timeout: float | None = None) -> ToolResult:
        """Call a listed tool with the model's (flat) arguments, wrapped as the server needs."""
        tool = self.tools[name]
        forwarded = forward_arguments(tool, arguments)
        result = await self.client.call_tool(name, forwarded, read_timeout_seconds=timeout)
        return ToolResult(result_text(result.content, result.structured_content), bool(result.is_error), forwarded)


@cache
def _tls_context() -> ssl.SSLContext:
    """httpx2's default TLS context (system or certifi CAs, `SSL_CERT_FILE` honoured), made once."""
    return httpx2.create_ssl_context()


@asynccontextmanager
async def connect(
    target: str | StdioServerParameters, headers: dict[str, str] | None = None, timeout: float = 120.0
) -> AsyncIterator[MCPConnection]:
    """Connect to an MCP server: a URL (Streamable HTTP, with headers) or stdio parameters."""
    if isinstance(target, str):
        # As `mcp.shared._httpx_utils.create_mcp_http_client`, but the client made per trial reuses
        # one TLS context: building it (loading every CA certificate) was the largest CPU cost of a
        # control-agent trial in the harness.
        timeout_config = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        http = httpx2.AsyncClient(timeout=timeout_config, headers=headers, verify=_tls_context())
        async with http:
            transport = streamable_http_client(target, http_client=http)
            async with Client(transport, read_timeout_seconds=timeout, cache=None) as client:
                yield MCPConnection(client)
    else:
        async with Client(target, read_timeout_seconds=timeout, cache=None) as client:
            yield MCPConnection(client)
