"""Where a run's MCP endpoint, REST API and sandbox are, for each kind of `EVAL_SERVER`.

Why here: reaching a sandbox needs Neon's REST API next to the MCP endpoint, and which API goes
with which MCP URL is a Neon fact. The local server serves both from one origin; Neon's cloud
serves MCP at mcp.neon.tech and the API at console.neon.tech; a loopback URL is taken for localneon
only when its `/api/v2` answers as localneon's does; for any other URL the harness cannot guess,
so it asks for `NEON_API_URL` instead of inventing an address that does not exist. A stdio server
(`neon-npm` or a command) gets the API of the harness's localneon, or `NEON_API_URL` when given.

Every URL trial's MCP session is pinned to the trial's own project with Neon's URL grant
(`?projectId=...`, plus `readonly` and `category` from the case's grant), so the model can
neither see another trial's project nor reach the project tools of the account. A stdio server
cannot be pinned: the run says so loudly (`stdio.warn_unpinned`). Local runs hold their projects in
a pool (`local_pool`), so trials on one project see the same tool list.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2
from mcp.client.stdio import StdioServerParameters

from harness.cases import Case, Grant
from harness.config import DEFAULT_NEON_API_URL, ConfigError, Settings
from harness.mcp.client import ServerFault
from harness.mcp.server_process import ServerEndpoints
from harness.recording.records import Snapshot
from harness.servers.family import ExpectedStart, ServerUnderTest, TrialSandbox
from harness.servers.neon.api import NeonAPI, NeonAPIError
from harness.servers.neon.expected import StartCopy, copy_main, copy_name, delete_copy, expected_from_copy
from harness.servers.neon.leftovers import collect_ended_runs
from harness.servers.neon.local_pool import LocalPoolSandbox
from harness.servers.neon.pool import ProjectPool, parse_pool, shared_pool
from harness.servers.neon.sandbox import (
    LocalProjectSandbox,
    NeonPoolSandbox,
    Sandbox,
    SandboxInfo,
    _database_from,
    _role_from,
    project_name,
)
from harness.servers.neon.state import capture_databases, statements_running
from harness.servers.neon.stdio import install_before_start, stdio_target, warn_unpinned

NEON_MCP_HOST = "mcp.neon.tech"
PROBE_TIMEOUT_S = 5.0
# The most copies of main (branches the model made) read at the user's approving answer: a careful agent
# has one temporary branch then; a model that made a hundred must not make the capture a hundred long.
MAX_COPIES_CAPTURED = 8


@dataclass
class Backend:
    """Where MCP and the REST API answer for this runner."""

    mcp_target: str | StdioServerParameters
    mcp_headers: dict[str, str]
    api: NeonAPI
    sandbox: Sandbox
    # The server under test when it is not the one at `mcp_target` (DBHub's, on each trial's main):
    # the sandboxes, the state and the expected state stay this backend's, through Neon's REST API.
    server: ServerUnderTest | None = None

    async def target_for(self, sandbox: TrialSandbox, grant: Grant | None = None) -> str | StdioServerParameters:
        """The MCP target of one trial: a URL pinned to its project (a stdio command cannot be), or
        what the other server under test says."""
        if self.server is not None:
            return await self.server.target_for(sandbox, grant, lambda: self.connection_uri(sandbox))
        if isinstance(self.mcp_target, StdioServerParameters):
            return self.mcp_target
        return pinned_url(self.mcp_target, sandbox.sandbox_id, grant)

    # --- the trial runner's view of it (`harness.servers.family.TrialBackend`) ------------------

    def open_sandbox(self, case: Case, label: str) -> AbstractAsyncContextManager[TrialSandbox]:
        return cast(AbstractAsyncContextManager[TrialSandbox], self.sandbox.open(case, label))

    async def connection_uri(self, sandbox: TrialSandbox, database: str | None = None) -> str:
        info = _neon(sandbox)
        return await self.api.connection_uri(info.project_id, info.branch_id, database or info.database, info.role)

    async def capture(self, sandbox: TrialSandbox, *, timeout: float, after_model: bool = False) -> Snapshot:
        info = _neon(sandbox)
        return await capture_databases(
            self.api,
            info.project_id,
            info.branch_id,
            info.databases,
            info.role,
            timeout=timeout,
            after_model=after_model,
        )

    async def objects_left(self, sandbox: TrialSandbox, harness_made: set[str]) -> list[str]:
        return await self.sandbox.branches_left(_neon(sandbox), harness_made)

    async def capture_copies(
        self, sandbox: TrialSandbox, harness_made: set[str], *, timeout: float
    ) -> dict[str, Snapshot]:
        info = _neon(sandbox)
        left = set(await self.objects_left(sandbox, harness_made))
        if not left:
            return {}
        ids = sorted(
            str(branch["id"])
            for branch in await self.api.list_branches(info.project_id)
            if str(branch.get("name") or branch["id"]) in left
            and branch["id"] not in harness_made
            and not branch.get("default")
        )[:MAX_COPIES_CAPTURED]
        return {
            branch_id: await capture_databases(
                self.api, info.project_id, branch_id, info.databases, info.role, timeout=timeout, after_model=True
            )
            for branch_id in ids
        }

    async def start_expected(self, sandbox: TrialSandbox, run_id: str, label: str) -> ExpectedStart:
        return await copy_main(self.api, _neon(sandbox), copy_name(run_id, label))

    async def finish_expected(self, start: ExpectedStart, case: Case, timeout: float) -> Snapshot:
        assert isinstance(start, StartCopy)
        return await expected_from_copy(self.api, start, case, timeout)

    async def drop_expected(self, start: ExpectedStart) -> str | None:
        assert isinstance(start, StartCopy)
        return await delete_copy(self.api, start)

    async def model_sql_running(self, sandbox: TrialSandbox, within: float) -> bool:
        try:
            async with asyncio.timeout(within):
                return await statements_running(await self.connection_uri(sandbox), within) > 0
        except Exception:  # cannot tell: the timeout is then not put down to the model
            return False

    def follow(self, endpoints: ServerEndpoints) -> None:
        self.api.retarget(endpoints.api_url)
        if isinstance(self.mcp_target, str):
            self.mcp_target = endpoints.mcp_url

    def on_lost_server(self, recover: Callable[[], Awaitable[str | None]]) -> None:
        self.api.recover = recover

    async def collect_leftovers(self, results_dir: Path, run_id: str) -> None:
        await collect_ended_runs(self.api, results_dir, run_id)

    async def aclose(self) -> None:
        """Delete what the sandbox keeps between trials (a local pool's projects), then close the client."""
        try:
            await self.sandbox.aclose()
        finally:
            await self.api.aclose()

    @asynccontextmanager
    async def probe_sandbox(self) -> AsyncIterator[TrialSandbox]:
        """A project's main to list tools in, as a trial would see them (a pool project, or a throwaway one)."""
        if isinstance(self.sandbox, NeonPoolSandbox):  # held like a trial's, so no trial shares it meanwhile
            pool = self.sandbox.pool
            async with pool.hold(next(iter(pool.projects))) as project_id:
                branch = await self.api.default_branch(project_id)
                role = await self.sandbox._role(project_id, str(branch["id"]))
                yield SandboxInfo(project_id, str(branch["id"]), str(branch.get("name") or "main"), role=role)
            return
        run_id = self.sandbox.run_id if isinstance(self.sandbox, LocalProjectSandbox | LocalPoolSandbox) else "probe"
        body = await self.api.create_project(project_name(run_id, "probe"))
        project_id = str(body["project"]["id"])
        try:
            branch = body.get("branch") or await self.api.default_branch(project_id)
            yield SandboxInfo(
                project_id, str(branch["id"]), str(branch.get("name") or "main"), _database_from(body), _role_from(body)
            )
        finally:
            await self.api.delete_project(project_id)


def _neon(sandbox: TrialSandbox) -> SandboxInfo:
    """The Neon sandbox behind the runner's view of it (this family's backends open only these)."""
    assert isinstance(sandbox, SandboxInfo), type(sandbox)
    return sandbox


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


AUTH_REFUSALS = (401, 403)  # a server (or its API) that refuses the harness's key refuses every trial alike


@dataclass(frozen=True)
class ProbeAnswer:
    """What answered at a guessed API address instead of localneon's project list."""

    status: int
    kind: str  # the content type
    message: str = ""  # Neon's error message in the body, when it has one

    def __str__(self) -> str:
        return f"HTTP {self.status} ({self.kind})"


@cache
def probe_localneon_api(api_url: str, key: str | None) -> ProbeAnswer | None:
    """None when `api_url` answers as localneon's API (a JSON project list), or when nothing listens
    there yet (each trial then records the refused connection); otherwise what answered instead."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with httpx2.Client(timeout=PROBE_TIMEOUT_S) as client:
            response = client.get(f"{api_url}/projects", params={"limit": 1}, headers=headers)
    except httpx2.TransportError:
        return None
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code == 200 and isinstance(body, dict) and isinstance(body.get("projects"), list):
        return None
    message = body.get("message") if isinstance(body, dict) else None
    return ProbeAnswer(response.status_code, kind, message if isinstance(message, str) else "")


def auth_refusal(error: BaseException) -> NeonAPIError | ServerFault | None:
    """The HTTP 401 or 403 inside `error` (an exception group, or the cause of one), if the server or its
    API refused the key."""
    if isinstance(error, NeonAPIError | ServerFault) and error.status in AUTH_REFUSALS:
        return error
    inner: list[BaseException] = list(error.exceptions) if isinstance(error, BaseExceptionGroup) else []
    if error.__cause__ is not None:
        inner.append(error.__cause__)
    for part in inner:
        found = auth_refusal(part)
        if found is not None:
            return found
    return None


def refused_key(settings: Settings, error: BaseException) -> ConfigError | None:
    """The line that stops the run when `error` (from asking the server its tools) is the server or its
    REST API refusing the key, else None (`ServerFamily.refused_key`)."""
    refused = auth_refusal(error)
    return None if refused is None else key_refusal(settings, str(refused))


def key_refusal(settings: Settings, detail: str) -> ConfigError:
    """The one line that stops a run whose server (or its REST API) refused the key it was sent."""
    key = "NEON_API_KEY is not set" if settings.neon_api_key is None else "it refused NEON_API_KEY"
    return ConfigError(
        f"EVAL_SERVER={settings.scrub(settings.server)} refused authentication ({settings.scrub(detail)}): {key}, "
        "the bearer token the harness sends to the server and its API; every trial would fail the same way. "
        "Set NEON_API_KEY (in .env or the environment) to a key the server accepts"
    )


def api_url_for(settings: Settings) -> str:
    """The REST API that serves the projects of `settings.server`; ConfigError when it cannot be known."""
    if settings.neon_api_url_set or settings.server_kind == "neon":
        return settings.neon_api_url
    if settings.server_kind != "url":
        raise ConfigError("the local server's API URL is only known once it runs")
    parts = urlsplit(settings.server)
    if parts.hostname == NEON_MCP_HOST:
        return DEFAULT_NEON_API_URL
    if _is_loopback(parts.hostname):  # localneon on this machine serves both, if that is what answers
        root = settings.server.split("?", 1)[0].rstrip("/").removesuffix("/mcp")
        guess = root + "/api/v2"
        key = settings.neon_api_key.get_secret_value() if settings.neon_api_key else None
        answer = probe_localneon_api(guess, key)
        if answer is not None and answer.status in AUTH_REFUSALS:
            said = f": {answer.message}" if answer.message else ""
            raise key_refusal(settings, f"GET {guess}/projects gave HTTP {answer.status}{said}")
        if answer is not None:
            raise ConfigError(
                f"EVAL_SERVER={settings.scrub(settings.server)} is on this machine, but it does not answer as "
                f"localneon: GET {guess}/projects gave {answer}. Set NEON_API_URL to the Neon API that serves "
                "its projects (e.g. a localneon's http://127.0.0.1:8787/api/v2, as `make server` starts it)"
            )
        return guess
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
        target = stdio_target(settings, endpoints.api_url, token)
        warn_unpinned(settings)
    sandbox: Sandbox
    if settings.local_pool == 0:  # EVAL_LOCAL_POOL=off: a fresh project per trial
        sandbox = LocalProjectSandbox(api, settings.run_id)
    else:
        sandbox = LocalPoolSandbox(api, settings.run_id, settings.local_pool, capture_timeout=settings.capture_timeout)
    return Backend(target, headers, api, sandbox)


def project_pool(settings: Settings, api_url: str) -> ProjectPool:
    """The process's one pool for `NEON_PROJECT_POOL` (ConfigError on a malformed entry)."""
    parse_pool(settings.neon_project_pool)  # raises before anything is shared
    return shared_pool(api_url, settings.neon_project_pool)


def remote_backend(settings: Settings) -> Backend:
    """A URL server (its API as `api_url_for` says), Neon's cloud, or a stdio server on `NEON_API_URL`;
    a pool when one is configured."""
    key = settings.neon_api_key.get_secret_value() if settings.neon_api_key else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    api_url = api_url_for(settings)
    api = api_for(settings, api_url)
    mcp_url: str | StdioServerParameters
    if settings.server_kind == "stdio":  # a stdio server on the API NEON_API_URL names
        mcp_url = stdio_target(settings, api_url, key)
        warn_unpinned(settings)
        headers = {}
    elif settings.server_kind == "neon":
        mcp_url = settings.neon_mcp_url
    else:
        mcp_url = mcp_endpoint(settings.server)
    if settings.neon_project_pool:
        pool = project_pool(settings, api_url)
        sandbox: Sandbox = NeonPoolSandbox(
            api, pool, settings.neon_golden_branch, run_id=settings.run_id, capture_timeout=settings.capture_timeout
        )
    else:
        sandbox = LocalProjectSandbox(api, settings.run_id)
    return Backend(mcp_url, headers, api, sandbox)


def check_cases(settings: Settings, fixtures: Iterable[str]) -> None:
    """Stop the run at start when a case's fixture has no pool project (or the API cannot be known);
    install Neon's published server first when the run uses it."""
    install_before_start(settings)
    if settings.server_kind not in ("neon", "url"):
        return
    api_url = api_url_for(settings)
    if not settings.neon_project_pool:
        return
    pool = project_pool(settings, api_url)
    missing = pool.missing(fixtures)
    if missing:
        held = ", ".join(f"{fixture} {len(ids)}" for fixture, ids in sorted(pool.projects.items()))
        raise ConfigError(
            f"NEON_PROJECT_POOL has no project of fixture(s) {', '.join(missing)}, which this run's cases use "
            f"(the pool has {held}); `python -m harness.pool setup --apply` keeps the pool's projects and "
            "creates the missing ones: set NEON_PROJECT_POOL to the last line it prints"
        )
