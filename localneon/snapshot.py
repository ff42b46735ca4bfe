"""Save an MCP server's tool surface as a file, and report drift between localneon and a snapshot.

    python -m localneon.snapshot https://mcp.neon.tech/mcp -o neon.json        # token from $NEON_API_KEY
    python -m localneon.snapshot "python -m localneon --transport stdio" -o local.json
    python -m localneon.snapshot --drift neon.json                 # this localneon's tools vs the file
    python -m localneon.snapshot --drift neon.json http://127.0.0.1:8787/mcp   # a live server vs the file

The bearer token is read from the environment variable named by ``--token-env`` (default
``NEON_API_KEY``), never from the command line, and is never written to the file. Drift exits 1
when there are differences, so CI can watch how far the twin is from production: tools and
parameters, and annotations (changed, or missing on one side: 0.6.5 declares none). Descriptions
are reported too, one line per tool with both lengths, a similarity figure and where they first
part, but do not change the exit status: localneon words its tools in its own sentences, so its
descriptions always differ from Neon's; the figures show where they drifted far.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from localneon.grants import strip_notices
from localneon.surface import HINTS, Surface, SurfaceError, SurfaceTool, drift, tool_entry, unwrap

EXCERPT = 40  # characters of each side shown where two descriptions first part


def is_url(server: str) -> bool:
    return server.startswith(("http://", "https://"))


@asynccontextmanager
async def open_client(server: str, token: str | None) -> AsyncIterator[Client]:
    """A real MCP session: Streamable HTTP for a URL, else stdio with the command spawned."""
    if is_url(server):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        http = create_mcp_http_client(headers=headers)
        async with http, Client(streamable_http_client(server, http_client=http)) as client:
            yield client
    else:
        command, *args = shlex.split(server)
        params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
        async with Client(params, mode="legacy") as client:
            yield client


async def list_surface(server: str, token: str | None) -> dict[str, Any]:
    """Every tool the server lists (all pages), with where and when, as a snapshot document."""
    async with open_client(server, token) as client:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        info = client.server_info
    where = server
    if is_url(server):  # never keep credentials a URL may carry (user:password@)
        parts = urlsplit(server)
        host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        where = urlunsplit((parts.scheme, host, parts.path, parts.query, ""))
    if token:  # a stdio server may take its key as an argument (Neon's 0.6.5 does)
        where = where.replace(token, "[REDACTED]")
    return {
        "snapshot": {
            "server": where,
            "server_info": info.model_dump(exclude_none=True) if info is not None else None,
            "taken_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tool_count": len(tools),
        },
        "tools": [tool_entry(t.name, t.description, t.input_schema, t.annotations) for t in tools],
    }


def own_tools(surface: Surface | None) -> dict[str, SurfaceTool]:
    """This localneon's own tools (default descriptions), under the grant the snapshot was taken with."""
    from localneon.server import Settings, ToolRegistry

    grant = surface.grant() if surface is not None else None
    registry = ToolRegistry(Settings())
    return {
        t.name: SurfaceTool(
            t.name,
            t.description or "",
            unwrap(t.input_schema),
            t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else {},
        )
        for t in registry.tools(grant)
    }


def annotation_drift(ours: dict[str, SurfaceTool], snapshot: dict[str, SurfaceTool]) -> list[str]:
    """Annotations one side declares and the other lacks (the changed ones are in `drift`'s lines)."""
    lines: list[str] = []
    for name, theirs in snapshot.items():
        if name not in ours:
            continue
        missing = [key for key in ("title", *HINTS) if key in ours[name].annotations and key not in theirs.annotations]
        if missing and not theirs.annotations:
            lines.append(f"{name}: the snapshot declares no annotations (here: {_hints(ours[name], missing)})")
        elif missing:
            lines.append(f"{name}: {_hints(ours[name], missing)} here, missing in the snapshot")
    return lines


def _hints(tool: SurfaceTool, keys: list[str]) -> str:
    return ", ".join(f"{key} {tool.annotations[key]!r}" for key in keys)


def description_drift(ours: dict[str, SurfaceTool], snapshot: dict[str, SurfaceTool]) -> list[str]:
    """One line per tool whose description differs: lengths, similarity (0-1) and where they part."""
    lines: list[str] = []
    for name, theirs in snapshot.items():
        if name not in ours:
            continue
        # Notices follow the grant a session runs under, not the tool: compared without them.
        here, there = strip_notices(ours[name].description), strip_notices(theirs.description)
        if here == there:
            continue
        similarity = difflib.SequenceMatcher(None, here, there, autojunk=False).ratio()
        lines.append(
            f"{name}: description {len(here)} chars here, {len(there)} in the snapshot, similarity "
            f"{similarity:.2f}; first differs at {_parting(here, there)}"
        )
    return lines


def _parting(here: str, there: str) -> str:
    """`char N: here '...' / snapshot '...'`, the first place the two texts differ."""
    index = next((i for i, (a, b) in enumerate(zip(here, there, strict=False)) if a != b), min(len(here), len(there)))
    return f"char {index}: here {here[index : index + EXCERPT]!r} / snapshot {there[index : index + EXCERPT]!r}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localneon.snapshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("server", nargs="?", help="an MCP URL (http/https) or a command speaking MCP over stdio")
    parser.add_argument("-o", "--output", help="where to write the snapshot (default: stdout)")
    parser.add_argument("--drift", metavar="FILE", help="compare a snapshot with this localneon (or with SERVER)")
    parser.add_argument("--token-env", default="NEON_API_KEY", help="environment variable holding the bearer token")
    args = parser.parse_args(argv)
    token = os.environ.get(args.token_env) or None
    if args.drift:
        try:
            snapshot = Surface.load(args.drift)
        except SurfaceError as exc:
            print(f"snapshot: {exc}", file=sys.stderr)
            return 2
        if args.server:
            live = Surface.from_document(anyio.run(list_surface, args.server, token), args.server)
            ours = live.tools
        else:
            ours = own_tools(snapshot)
        lines = drift(ours, snapshot.tools) + annotation_drift(ours, snapshot.tools)
        for line in lines:
            print(line)
        described = description_drift(ours, snapshot.tools)
        for line in described:
            print(line)
        if not lines:
            words = f"; {len(described)} descriptions differ" if described else ""
            print(f"no drift: {len(snapshot.tools)} tools agree{words}", file=sys.stderr)
        return 1 if lines else 0
    if not args.server:
        parser.error("give a SERVER to snapshot, or --drift FILE")
    document = anyio.run(list_surface, args.server, token)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        target = Path(args.output)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
        print(f"snapshot: {len(document['tools'])} tools from {document['snapshot']['server']} -> {target}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
