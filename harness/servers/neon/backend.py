"""Where a run's MCP endpoint, REST API and sandbox are, for each kind of `EVAL_SERVER`.

Why here: reaching a sandbox needs Neon's REST API next to the MCP endpoint, and which API goes
with which MCP URL is a Neon fact. The local server serves both from one origin; Neon's cloud
serves MCP at mcp.neon.tech and the API at console.neon.tech; for any other URL the harness cannot
guess, so it asks for `NEON_API_URL` instead of inventing an address that does not exist.

Every trial's MCP session is pinned to the trial's own project with Neon's URL grant
(`?projectId=...`, plus `readonly` and `category` from the case's grant), so the model can
neither see another trial's project nor reach the project tools of the account.
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mcp.client.stdio import StdioServerParameters

from harness.cases import Grant
from harness.config import DEFAULT_NEON_API_URL, ConfigError, Settings
from harness.mcp.client import stdio_parameters
from harness.mcp.server_process import ServerEndpoints
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.pool import ProjectPool, parse_pool, shared_pool
from harness.servers.neon.sandbox import LocalProjectSandbox, NeonPoolSandbox, Sandbox, project_name

NEON_MCP_HOST = "mcp.neon.tech"


@dataclass
class Backend:
    """Where MCP and the REST API answer for this runner."""

    mcp_target: str | StdioServerParameters
    mcp_headers: dict[str, str]
    api: NeonAPI
    sandbox: Sandbox

    def target_for(self, project_id: str, grant: Grant | None = None) -> str | StdioServerParameters:
        """The MCP target of one trial: a URL pinned to its project (a stdio command cannot be)."""
        if isinstance(self.mcp_target, StdioServerParameters):
            return self.mcp_target
        return pinned_url(self.mcp_target, project_id, grant)

    @asynccontextmanager
    async def probe_project(self) -> AsyncIterator[str]:
        """A project to list tools under, as a trial would see them (a pool project, or a throwaway one)."""
        if isinstance(self.sandbox, NeonPoolSandbox):  # held like a trial's, so no trial shares it meanwhile
            pool = self.sandbox.pool
            async with pool.hold(next(iter(pool.projects))) as project_id:
                yield project_id
            return
        run_id = self.sandbox.run_id if isinstance(self.sandbox, LocalProjectSandbox) else "probe"
        body = await self.api.create_project(project_name(run_id, "probe"))
        try:
            yield str(body["project"]["id"])
        finally:
            await self.api.delete_project(str(body["project"]["id"]))


def pinned_url(url: str, project_id: str, grant: Grant | None = None) -> str:
    """`url` with Neon's grant: `projectId`, and `readonly=true` / `category=a,b` from the case's grant."""
    parts = urlsplit(url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ("projectId", "readonly")]
    if grant is not None and grant.categories is not None:
        kept = [(k, v) for k, v in kept if k != "category"]
    query = [*kept, ("projectId", project_id)]
    if grant is not None and grant.readonly:
        query.append(("readonly", "true"))
    if grant is not None and grant.categories is not None:
        query.append(("category", ",".join(grant.categories)))
    return urlunsplit(parts._replace(query=urlencode(query, safe=",")))


def mcp_endpoint(url: str) -> str:
    """`url`'s MCP endpoint (`.../mcp`, added when missing), its query string kept for the grant to merge with."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/").removesuffix("/mcp") + "/mcp"
    return urlunsplit(parts._replace(path=path))


def _is_loopback(host: str | None) -> bool:
    if host in (None, ""):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_url_for(settings: Settings) -> str:
    """The REST API that serves the projects of `settings.server`; ConfigError when it cannot be known."""
    if settings.neon_api_url_set or settings.server_kind == "neon":
        return settings.neon_api_url
    if settings.server_kind != "url":
        raise ConfigError("the local server's API URL is only known once it runs")
    parts = urlsplit(settings.server)
    if parts.hostname == NEON_MCP_HOST:
        return DEFAULT_NEON_API_URL
    if _is_loopback(parts.hostname):  # a Neon-compatible server on this machine serves both (localneon)
        root = settings.server.split("?", 1)[0].rstrip("/").removesuffix("/mcp")
        return root + "/api/v2"
    raise ConfigError(
        f"EVAL_SERVER={settings.scrub(settings.server)}: no Neon REST API is known for this server, and the harness "
        "needs one to make each trial's sandbox and read its state; set NEON_API_URL to the API that serves "
        "its projects"
    )


def api_for(settings: Settings, url: str | None = None) -> NeonAPI:
    """A REST client for the configured account (key, organization, branch expiry)."""
    key = settings.neon_api_key.get_secret_value() if settings.neon_api_key else None
    return NeonAPI(
        url or api_url_for(settings),
        key,
        org_id=settings.neon_org_id,
        branch_ttl=settings.neon_branch_ttl,
        operation_poll=0.1 if settings.server_kind == "url" else 0.5,
    )


def local_backend(settings: Settings, endpoints: ServerEndpoints, token: str | None) -> Backend:
    """The local server (or a stdio command beside it, which shares its projects through the API)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    api = NeonAPI(endpoints.api_url, token, operation_poll=0.05)
    target: str | StdioServerParameters = endpoints.mcp_url
    if settings.server_kind == "stdio":
        target = stdio_parameters(settings.server)
    return Backend(target, headers, api, LocalProjectSandbox(api, settings.run_id))


def project_pool(settings: Settings, api_url: str) -> ProjectPool:
    """The process's one pool for `NEON_PROJECT_POOL` (ConfigError on a malformed entry)."""
    parse_pool(settings.neon_project_pool)  # raises before anything is shared
    return shared_pool(api_url, settings.neon_project_pool)


def remote_backend(settings: Settings) -> Backend:
    """A URL server (its API as `api_url_for` says) or Neon's cloud; a pool when one is configured."""
    key = settings.neon_api_key.get_secret_value() if settings.neon_api_key else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    api_url = api_url_for(settings)
    api = api_for(settings, api_url)
    mcp_url = settings.neon_mcp_url if settings.server_kind == "neon" else mcp_endpoint(settings.server)
    if settings.neon_project_pool:
        pool = project_pool(settings, api_url)
        sandbox: Sandbox = NeonPoolSandbox(api, pool, settings.neon_golden_branch, run_id=settings.run_id)
    else:
        sandbox = LocalProjectSandbox(api, settings.run_id)
    return Backend(mcp_url, headers, api, sandbox)


def check_cases(settings: Settings, fixtures: Iterable[str]) -> None:
    """Stop the run at start when a case's fixture has no pool project (or the API cannot be known)."""
    if settings.server_kind not in ("neon", "url"):
        return
    api_url = api_url_for(settings)
    if not settings.neon_project_pool:
        return
    missing = project_pool(settings, api_url).missing(fixtures)
    if missing:
        raise ConfigError(
            f"NEON_PROJECT_POOL has no project holding the fixture(s) {', '.join(missing)} that cases use; "
            "create them with `python -m harness.pool setup --apply` and add the line it prints"
        )
