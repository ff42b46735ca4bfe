"""A stdio MCP server (the real mcp SDK) that fails the way real servers do, for the fault tests.

`python tests/faults/mcp_fault_server.py MODE`, where MODE is one of:
- `die-at-start`: exits before answering anything (a server whose start-up failed);
- `die-after-list`: lists its tools, then exits as soon as a tool is called (a crashed server);
- `hang-call`: lists its tools, then never answers `tools/call`;
- `hang-initialize`: reads the client's messages and never answers any (not even `initialize`);
- `api-404 URL`: every tool asks the REST API at URL and reports its HTTP error, as Neon's server
  does when its API refuses (`Request failed with status code 404`).
- `api-error-on TOOL URL`: only TOOL asks the API at URL and reports its error; every other tool
  answers plainly (a server whose backend fails one operation, e.g. with a 503).
- `whoami`: every tool answers with the name and version the client introduced itself by.
The tools carry the names of Neon's, so a control agent calls them as it would on the real server.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from typing import Any

import anyio
from mcp import types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

TOOL_NAMES = (
    "list_projects",
    "describe_project",
    "run_sql",
    "get_database_tables",
    "describe_table_schema",
    "prepare_database_migration",
    "complete_database_migration",
    "describe_branch",
    "delete_branch",
)
ANY_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}


def tools() -> list[types.Tool]:
    return [
        types.Tool(name=name, description=f"{name} (fault server)", input_schema=ANY_ARGUMENTS) for name in TOOL_NAMES
    ]


def api_error(name: str, api: str | None = None) -> str:
    """What Neon's server answers when its API call fails: the HTTP status in axios's words."""
    url = (api or (sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:9/api/v2")).rstrip("/") + "/projects"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return f"{name}: unexpected success {response.status}"
    except urllib.error.HTTPError as error:
        return f"Error: Request failed with status code {error.code}"
    except OSError as error:
        return f"Error: connect ECONNREFUSED ({error})"


def build(mode: str) -> Server[Any]:
    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools())

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if mode == "die-after-list":
            os._exit(3)
        if mode == "hang-call":
            await anyio.sleep_forever()
        if mode == "whoami":
            initialized = ctx.session.client_params
            info = initialized.client_info if initialized is not None else None
            text = f"client: {info.name} {info.version}" if info is not None else "client: (none given)"
            return types.CallToolResult(content=[types.TextContent(text=text)])
        if mode == "api-error-on":
            failing, api = sys.argv[2], sys.argv[3]
            if params.name != failing:
                return types.CallToolResult(content=[types.TextContent(text=f"{params.name}: done (fault server)")])
            text = await anyio.to_thread.run_sync(api_error, params.name, api)
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        text = await anyio.to_thread.run_sync(api_error, params.name)
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)

    return Server("fault-server", version="0.0.1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve(mode: str) -> None:
    async with stdio_server() as (read_stream, write_stream):
        server = build(mode)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "die-at-start":
        sys.exit("fault server: cannot start (GET /api/v2/auth answered 404)")
    if mode == "hang-initialize":
        for _ in sys.stdin:  # read everything, answer nothing, until the client hangs up
            pass
        return
    if mode not in ("die-after-list", "hang-call", "api-404", "api-error-on", "whoami"):
        sys.exit(f"unknown mode {mode!r}")
    anyio.run(serve, mode)


if __name__ == "__main__":
    main()
