"""Save an MCP server's tool surface as a file, and report drift between localneon and a snapshot.

    python -m localneon.snapshot https://mcp.neon.tech/mcp -o neon.json        # token from $NEON_API_KEY
    python -m localneon.snapshot "python -m localneon --transport stdio" -o local.json
    python -m localneon.snapshot --drift neon.json                 # this localneon's tools vs the file
    python -m localneon.snapshot --drift neon.json http://127.0.0.1:8787/mcp   # a live server vs the file

The bearer token is read from the environment variable named by ``--token-env`` (default
``NEON_API_KEY``), never from the command line, and is never written to the file. A server that
fails to start (or refuses the session) is one line naming it and why: for a stdio server, its own
first error line (its stderr is kept and shown only then, with the token scrubbed), never the
client's exception groups. Neon's published server asks Neon's API for its account at start:
against the local twin it needs ``NEON_API_HOST`` (docs/local-twin.md has the command). Drift exits 1
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
import re
import shlex
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from localneon import settings
from localneon.mcp.grants import strip_notices
from localneon.mcp.surface import HINTS, Surface, SurfaceError, SurfaceTool, drift, tool_entry, unwrap

EXCERPT = 40  # characters of each side shown where two descriptions first part


def is_url(server: str) -> bool:
    return server.startswith(("http://", "https://"))


@asynccontextmanager
async def open_client(
    server: str, token: str | None, errlog: TextIO | None = None, refusals: list[str] | None = None
) -> AsyncIterator[Client]:
    """A real MCP session: Streamable HTTP for a URL (each HTTP error it meets, status and body, added
    to `refusals`), else stdio with the command spawned (its stderr to `errlog`, default ours)."""
    if is_url(server):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        http = create_mcp_http_client(headers=headers)

        async def note_refusal(response: Any) -> None:
            if response.status_code >= 400 and refusals is not None:
                body = " ".join((await response.aread()).decode("utf-8", errors="replace").split())[:200]
                refusals.append(f"HTTP {response.status_code}" + (f": {body}" if body else ""))

        http.event_hooks["response"].append(note_refusal)
        async with http, Client(streamable_http_client(server, http_client=http)) as client:
            yield client
    else:
        command, *args = shlex.split(server)
        params = StdioServerParameters(command=command, args=args, env=settings.environment())
        transport = stdio_client(params, errlog=errlog or sys.stderr)
        async with Client(transport, mode="legacy") as client:
            yield client


class StartFailure(RuntimeError):
    """The server could not be listed: the one line that says which server and why."""


def _leaf(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups: what actually went wrong."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _scrub(text: str, token: str | None) -> str:
    text = text.replace(token, "[REDACTED]") if token and len(token) >= 4 else text
    return re.sub(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}", r"\1[REDACTED]", text)  # a header a server echoed


def _first_error_line(stderr: str) -> str | None:
    """The server's own word on why it stopped: its first line that names an error, else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return next((line for line in lines if re.search(r"error|exception|fatal", line, re.IGNORECASE)), None) or (
        lines[-1] if lines else None
    )


def _hint(server: str, said: str, token_env: str) -> str:
    """What to do about a server that could not reach its API (Neon's published server asks it at
    start), or whose API or endpoint refused the key."""
    if re.search(r"status code 40[13]\b|HTTP 40[13]\b", said):
        if is_url(server):
            return f" (the key was refused: {token_env} must hold a key the server accepts)"
        return " (its API refused the key: NEON_API_KEY must be one the API at NEON_API_HOST accepts)"
    unreachable = re.search(r"ENOTFOUND|ECONNREFUSED|EAI_AGAIN|getaddrinfo|fetch failed", said)
    if unreachable and not settings.neon_api_host_set():
        return (
            " (it asks Neon's API at start: against the local twin set NEON_API_HOST, e.g. "
            "NEON_API_HOST=http://127.0.0.1:8787/api/v2 with `make server`; docs/local-twin.md)"
        )
    return ""


async def listed_surface(server: str, token: str | None, token_env: str = "NEON_API_KEY") -> dict[str, Any]:
    """`list_surface`, or StartFailure with one line when the server does not start or answer: a stdio
    server's stderr is kept apart and only its first error line is shown, token scrubbed."""
    refusals: list[str] = []
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            document = await list_surface(server, token, None if is_url(server) else errlog, refusals)
        except Exception as error:
            errlog.seek(0)
            said = refusals[0] if refusals else _first_error_line(errlog.read())
            leaf = _leaf(error)
            reason = f"{type(leaf).__name__}: {leaf}".rstrip(": ")
            detail = f"{reason}; it said: {said}" if said else reason
            shown = _scrub(server, token)
            kind = "the stdio server" if not is_url(server) else "the server"
            hint = _hint(server, detail, token_env)
            raise StartFailure(f"{kind} {shown} did not start or answer: {_scrub(detail, token)}{hint}") from None
        errlog.seek(0)
        sys.stderr.write(_scrub(errlog.read(), token))  # what it said while it worked, passed on
    return document


async def list_surface(
    server: str, token: str | None, errlog: TextIO | None = None, refusals: list[str] | None = None
) -> dict[str, Any]:
    """Every tool the server lists (all pages), with where and when, as a snapshot document."""
    async with open_client(server, token, errlog, refusals) as client:
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
    from localneon.mcp.server import Settings, ToolRegistry

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
    token = settings.variable(args.token_env)
    if args.drift:
        try:
            snapshot = Surface.load(args.drift)
        except SurfaceError as exc:
            print(f"snapshot: {exc}", file=sys.stderr)
            return 2
        if args.server:
            try:
                live = Surface.from_document(anyio.run(listed_surface, args.server, token, args.token_env), args.server)
            except StartFailure as failure:
                print(f"snapshot: {failure}", file=sys.stderr)
                return 2
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
    try:
        document = anyio.run(listed_surface, args.server, token, args.token_env)
    except StartFailure as failure:
        print(f"snapshot: {failure}", file=sys.stderr)
        return 2
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
