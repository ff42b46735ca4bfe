"""The MCP side: connect (stdio or Streamable HTTP), list every tool, call tools.

Why the wrapping logic lives here: Neon's server wraps every tool's arguments as `{"params": {...}}`
while other servers take them flat. The model is always shown the flat schema, so both server
styles look the same to it, and arguments are wrapped again on the way to a wrapping server.

Whose failure a failed call is, is decided here too: a tool's error (`isError`, or a JSON-RPC error
about the call's arguments) is the model's to read and recover from; a closed connection, a call
the server never answered, an HTTP error on the transport or an internal error is the server's, and
raises `ServerFault`, which ends the trial as `infra_error`.
"""

from __future__ import annotations

import copy
import json
import re
import ssl
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, METHOD_NOT_FOUND, REQUEST_TIMEOUT

MAX_TOOL_PAGES = 100
TRIAL_HEADER = "X-Eval-Trial"  # names the trial on every MCP request it sends: servers ignore it, logs keep it
CLIENT_NAME = "mcp-migration-evals"
# JSON-RPC errors that say the server (or the way to it) failed, not that the call was wrong.
SERVER_SIDE_CODES = {
    CONNECTION_CLOSED: "connection closed",
    REQUEST_TIMEOUT: "no answer",
    INTERNAL_ERROR: "internal error",
}
HTTP_BODY_EXCERPT = 300
T = TypeVar("T")


class ServerFault(RuntimeError):
    """The server under test failed (not the tool): the trial is `infra_error`, never the model's doing.
    `status` is the HTTP status the transport met, when the server refused with one (401: a wrong key)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@cache
def client_info() -> Implementation:
    """How the harness introduces itself to a server: by name and version, not as the SDK's default."""
    try:
        found = version(CLIENT_NAME)
    except PackageNotFoundError:
        found = "0+unknown"
    return Implementation(name=CLIENT_NAME, version=found)


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


# How a server reports that its own backend refused (Neon's server relays its REST API's errors as
# tool errors, in axios's or fetch's words): a tool error of this shape is the server's, not the model's.
SERVER_FAILURE_TEXT = re.compile(
    r"status code [45]\d\d\b|\bHTTP(?:/[\d.]+)? ?[45]\d\d\b"
    r"|\b[45]\d\d (?:Not Found|Unauthorized|Forbidden|Internal Server Error|Bad Gateway|Service Unavailable)\b"
    r"|\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT)\b|fetch failed|socket hang up",
    re.IGNORECASE,
)


def server_side_error(text: str) -> bool:
    """Whether a tool's error text reports its server's backend failing (an HTTP error, a refused connection)."""
    return bool(SERVER_FAILURE_TEXT.search(text))


class HTTPErrors:
    """The last HTTP error status (and the start of its body) the transport met, so a JSON-RPC error the
    SDK made up from it ("Server returned an error response") can say what the server actually said."""

    def __init__(self) -> None:
        self.last: str | None = None
        self.status: int | None = None

    async def hook(self, response: httpx2.Response) -> None:
        if response.status_code < 400:
            return
        self.status = response.status_code
        body = (await response.aread()).decode("utf-8", errors="replace").strip()
        excerpt = " ".join(body.split())[:HTTP_BODY_EXCERPT]
        reason = response.reason_phrase or ""
        self.last = f"HTTP {response.status_code} {reason}".strip() + (f": {excerpt}" if excerpt else "")


def server_fault(error: MCPError, step: str, http: HTTPErrors | None = None) -> ServerFault | None:
    """The `ServerFault` an MCP error stands for, or None when it is the call's own (the model's) error."""
    code = error.code
    if http is not None and http.last and code in (INTERNAL_ERROR, METHOD_NOT_FOUND):
        return ServerFault(f"the server refused {step}: {http.last}", http.status)
    if code in SERVER_SIDE_CODES:
        return ServerFault(f"the server failed {step} ({SERVER_SIDE_CODES[code]}): {error.message}")
    return None


class MCPConnection:
    """One connected MCP client session and its tool listing."""

    def __init__(self, client: Client, http: HTTPErrors | None = None) -> None:
        self.client = client
        self.http = http
        self.tools: dict[str, ServerTool] = {}
        self.in_flight: str | None = None  # the request awaiting the server's answer, e.g. "tools/call run_sql"

    async def list_tools(self) -> list[ServerTool]:
        """Every tool, following pagination cursors."""
        tools: list[ServerTool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await self._request("tools/list", self.client.list_tools(cursor=cursor))
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
        call = self.client.call_tool(name, forwarded, read_timeout_seconds=timeout)
        result = await self._request(f"tools/call {name}", call)
        return ToolResult(result_text(result.content, result.structured_content), bool(result.is_error), forwarded)

    async def _request(self, step: str, request: Awaitable[T]) -> T:
        """Await one request to the server, naming it while it is in flight (and still, once cancelled:
        the trial's deadline reads it); server failures raise ServerFault."""
        self.in_flight = step
        try:
            result = await request
        except MCPError as error:
            self.in_flight = None
            fault = server_fault(error, step, self.http)
            if fault is not None:
                raise fault from error
            raise
        self.in_flight = None
        return result


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
        errors = HTTPErrors()
        http = httpx2.AsyncClient(
            timeout=timeout_config,
            headers=headers,
            verify=_tls_context(),
            event_hooks={"response": [errors.hook]},
        )
        async with http:
            transport = streamable_http_client(target, http_client=http)
            async with _client(transport, timeout, errors) as client:
                yield MCPConnection(client, errors)
    else:
        async with _client(target, timeout, None) as client:
            yield MCPConnection(client)


@asynccontextmanager
async def _client(target: Any, timeout: float, http: HTTPErrors | None) -> AsyncIterator[Client]:
    """A connected SDK client introducing itself by name; a failed handshake is the server's fault."""
    client = Client(target, read_timeout_seconds=timeout, cache=None, client_info=client_info())
    try:
        entered = await client.__aenter__()
    except (MCPError, BaseExceptionGroup) as raised:
        error = _mcp_error_in(raised)  # the SDK's task groups wrap it
        if error is None:
            raise
        fault = server_fault(error, "initialize", http)
        raise (fault or ServerFault(f"the server refused initialize: {error.message}")) from raised
    try:
        yield entered
    except BaseException as error:
        await client.__aexit__(type(error), error, error.__traceback__)  # the SDK never suppresses
        raise
    else:
        await client.__aexit__(None, None, None)


def _mcp_error_in(error: BaseException) -> MCPError | None:
    """The MCP error itself, or the first one inside (nested) exception groups."""
    if isinstance(error, MCPError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _mcp_error_in(inner)
            if found is not None:
                return found
    return None
