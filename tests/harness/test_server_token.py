"""The local server's token reaches it in its environment, never on its command line (which `ps`
shows every user), and a token that looks like an option (starts with "-") is still the token."""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx

from harness.mcp.server_process import LocalServer


async def test_token_starting_with_a_dash_through_the_launcher() -> None:
    token = "-" + secrets.token_urlsafe(18)  # what token_urlsafe gives about one run in 64
    server = LocalServer(token=token)
    try:
        endpoints = await server.start()
        assert server.process is not None
        proc = Path("/proc") / str(server.process.pid)
        assert token.encode() not in (proc / "cmdline").read_bytes()
        assert f"LOCALNEON_TOKEN={token}".encode() in (proc / "environ").read_bytes().split(b"\0")
        async with httpx.AsyncClient(base_url=endpoints.api_url, timeout=30) as client:
            allowed = await client.get("/projects", headers={"Authorization": f"Bearer {token}"})
            refused = await client.get("/projects", headers={"Authorization": "Bearer " + token[1:]})
        assert allowed.status_code == 200, allowed.text
        assert refused.status_code == 401
    finally:
        server.stop()
    assert not server.alive
