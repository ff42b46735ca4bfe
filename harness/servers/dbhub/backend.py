"""DBHub's trial backend: sandboxes, state and the expected state on localneon, MCP from DBHub.

Why localneon's REST API and not databases made directly on the embedded cluster: the sandbox, the
state capture (the schema dump of `GET .../schema`, the data fingerprints over SQL) and the expected
state (a branch of main at trial start, the reference SQL on it) are then exactly the Neon family's,
`harness.servers.neon.backend.Backend`, on the same embedded PostgreSQL: a server-design A/B
(`make ab A=server:local B=server:dbhub`) differs in the MCP server alone. Each trial's main is a
database of its own (a pool project's main restored from the fixture's golden branch, or a fresh
project with `EVAL_LOCAL_POOL=off`), created from `datasets/fixtures/*.sql` and deleted by the same
code (and, after a killed run, the same janitor) as the Neon family's.

What differs is the server under test (`DBHubServer`, composed into that backend, not a subclass of
it): for each trial, a DBHub process over stdio (`stdio.dbhub_target`),
started by the trial's MCP session on the connection URI of that trial's main and stopped when the
session ends (cancelled or not); DBHub reaches no other database. The case's `readonly` grant is
DBHub's own read-only mode.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from mcp.client.stdio import StdioServerParameters

from harness.cases import Grant
from harness.config import Settings
from harness.mcp.server_process import ServerEndpoints
from harness.servers.dbhub.stdio import dbhub_target
from harness.servers.family import TrialSandbox
from harness.servers.neon.backend import Backend, api_for, project_pool
from harness.servers.neon.backend import local_backend as neon_local_backend
from harness.servers.neon.sandbox import LocalProjectSandbox, NeonPoolSandbox, Sandbox


@dataclass(frozen=True)
class DBHubServer:
    """DBHub as the server under test (`harness.servers.family.ServerUnderTest`)."""

    settings: Settings

    async def target_for(
        self, sandbox: TrialSandbox, grant: Grant | None, main_uri: Callable[[], Awaitable[str]]
    ) -> StdioServerParameters:
        """DBHub on this trial's main: its own process, its DSN that main's connection URI."""
        return dbhub_target(self.settings, await main_uri(), grant)


def local_backend(settings: Settings, endpoints: ServerEndpoints, token: str | None) -> Backend:
    """Sandboxes on the harness's localneon, chosen as for the twin (`EVAL_LOCAL_POOL`); DBHub serves."""
    neon = neon_local_backend(settings.model_copy(update={"server": "local"}), endpoints, token)
    return replace(neon, mcp_headers={}, server=DBHubServer(settings))


def remote_backend(settings: Settings) -> Backend:
    """Sandboxes on the Neon-shaped API `NEON_API_URL` names (projects per trial, or `NEON_PROJECT_POOL`)."""
    api = api_for(settings, settings.neon_api_url)
    sandbox: Sandbox
    if settings.neon_project_pool:
        pool = project_pool(settings, settings.neon_api_url)
        sandbox = NeonPoolSandbox(
            api, pool, settings.neon_golden_branch, run_id=settings.run_id, capture_timeout=settings.capture_timeout
        )
    else:
        sandbox = LocalProjectSandbox(api, settings.run_id)
    return Backend(settings.neon_api_url, {}, api, sandbox, server=DBHubServer(settings))
