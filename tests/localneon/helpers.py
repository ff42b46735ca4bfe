"""Helpers for localneon tests: MCP client sessions over HTTP and stdio, and result checks."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, TextContent

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class HttpServer:
    url: str
    mcp_url: str
    api_url: str
    token: str

    def api(self) -> httpx.Client:
        """A REST client for ``/api/v2`` carrying the bearer token."""
        return httpx.Client(base_url=self.api_url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60)


@asynccontextmanager
async def http_client(
    server: HttpServer, mode: str = "auto", headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """A real MCP client session over Streamable HTTP (``auto`` negotiates the newest protocol)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {server.token}", **(headers or {})})
    async with http, Client(streamable_http_client(server.mcp_url, http_client=http), mode=mode) as client:
        yield client


@asynccontextmanager
async def stdio_client(*extra: str, mode: str = "legacy") -> AsyncIterator[Client]:
    """A real MCP client session over stdio with a spawned ``python -m localneon``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "localneon", "--transport", "stdio", *extra],
        env={**os.environ},
        cwd=str(REPO),
    )
    async with Client(params, mode=mode) as client:
        yield client


async def call(client: Client, tool: str, /, **params: Any) -> CallToolResult:
    """Call a tool with Neon's wrapped arguments."""
    return await client.call_tool(tool, {"params": params})


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def ok(result: CallToolResult) -> str:
    """The text of a successful result; fails the test with the error text otherwise."""
    body = text(result)
    assert not result.is_error, body
    return body


def err(result: CallToolResult) -> str:
    body = text(result)
    assert result.is_error, f"expected an error, got: {body}"
    return body


@dataclass(frozen=True)
class Proj:
    id: str
    main: str
