"""Where a run's MCP endpoint, REST API and sandbox are, for each kind of `EVAL_SERVER`.

Why here: reaching a sandbox needs Neon's REST API next to the MCP endpoint, and which API goes
with which MCP URL is a Neon fact (the local server serves both from one origin; Neon's cloud
serves MCP at mcp.neon.tech and the API at console.neon.tech).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.client.stdio import StdioServerParameters

from harness.config import Settings
from harness.mcp_client import stdio_parameters
from harness.server_process import ServerEndpoints
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.sandbox import LocalProjectSandbox, NeonPoolSandbox, Sandbox


@dataclass
class Backend:
    """Where MCP and the REST API answer for this runner."""

    mcp_target: str | StdioServerParameters
    mcp_headers: dict[str, str]
    api: NeonAPI
    sandbox: Sandbox


def local_backend(settings: Settings, endpoints: ServerEndpoints, token: str | None) -> Backend:
    """The local server (or a stdio command beside it, which shares its projects through the API)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    api = NeonAPI(endpoints.api_url, token, operation_poll=0.05)
    target: str | StdioServerParameters = endpoints.mcp_url
    if settings.server_kind == "stdio":
        target = stdio_parameters(settings.server)
    return Backend(target, headers, api, LocalProjectSandbox(api, settings.run_id))


def remote_backend(settings: Settings) -> Backend:
    """A URL server (its API beside its MCP endpoint) or Neon's cloud (a pool of dedicated projects)."""
    key = settings.neon_api_key.get_secret_value() if settings.neon_api_key else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if settings.server_kind == "url":
        base = settings.server.rstrip("/")
        root = base[: -len("/mcp")] if base.endswith("/mcp") else base
        api = NeonAPI(root + "/api/v2", key, operation_poll=0.1)
        return Backend(root + "/mcp", headers, api, LocalProjectSandbox(api, settings.run_id))
    api = NeonAPI(settings.neon_api_url, key)
    pool = NeonPoolSandbox(api, settings.neon_project_pool, settings.neon_golden_branch)
    return Backend(settings.neon_mcp_url, headers, api, pool)
