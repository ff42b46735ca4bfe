"""What the trial runner needs from a server family, as types: the one seam for what is server-specific.

A *server family* is every MCP server that shares one way to make a trial safe and comparable: how
a sandbox is opened for a trial, how its main state is read before and after the model, how the
expected state is built, which connection a trial's MCP session goes to. `harness/run/` talks to a
family only through these protocols (a test checks it imports no family's package);
each family is one package under `harness/servers/` with a `family.py` that implements them, and
`harness/servers/registry.py` says which family serves which `EVAL_SERVER`. A family also says
what its tools are for (`ToolRoles`, for the scorers and control agents) and how a bundled case
reads in its terms (`case_for`: the cases are written in Neon's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

from mcp.client.stdio import StdioServerParameters

from harness.cases import Case, Grant
from harness.config import ConfigError, Settings
from harness.mcp.server_process import ServerEndpoints
from harness.recording.records import Snapshot
from harness.servers.roles import AnswerReader, ToolRoles

MCPTarget = str | StdioServerParameters  # a URL, or a command to start over stdio


class TrialSandbox(Protocol):
    """Where one trial runs, as the runner reads it (the family may keep more): an isolated unit the
    model is pointed at, holding the trial's main. The record keeps its Neon-era field names
    (`project_id`, `default_branch_id`, `default_branch_name`) for these three."""

    @property
    def sandbox_id(self) -> str:
        """The isolated unit the model is pointed at (Neon: the trial's project; DBHub: the same)."""
        ...

    @property
    def main_id(self) -> str:
        """The id of the sandbox's main, the state the verdict guards (Neon: its default branch)."""
        ...

    @property
    def main_name(self) -> str: ...

    database: str
    notes: list[str]  # what the sandbox did that the record should say
    before: Snapshot | None  # main as the sandbox already read it at open, if it did
    cleanup_error: str | None  # set when closing it failed (recorded; the run then fails)


class ServerUnderTest(Protocol):
    """A family's MCP server as it is pointed at one trial's sandbox, apart from where the sandbox
    lives: DBHub's server over sandboxes kept through Neon's REST API, say."""

    async def target_for(
        self, sandbox: TrialSandbox, grant: Grant | None, main_uri: Callable[[], Awaitable[str]]
    ) -> MCPTarget:
        """The trial's MCP target; `main_uri()` gives a connection URI of the sandbox's main when needed."""
        ...


class ExpectedStart(Protocol):
    """The family's copy of main taken before the model ran, from which the expected state is built."""

    @property
    def harness_made(self) -> set[str]:
        """The objects (Neon: branches) the harness made for it: never counted as the model's."""
        ...


class TrialBackend(Protocol):
    """One runner's connection to a family's server: sandboxes, state, the expected state, MCP targets."""

    mcp_headers: dict[str, str]

    def open_sandbox(self, case: Case, label: str) -> AbstractAsyncContextManager[TrialSandbox]:
        """An isolated main for one trial, closed (and cleaned up) when the context ends."""
        ...

    def probe_sandbox(self) -> AbstractAsyncContextManager[TrialSandbox]:
        """A sandbox to list tools in as a trial would see them (held or made, then let go)."""
        ...

    async def connection_uri(self, sandbox: TrialSandbox, database: str | None = None) -> str:
        """A PostgreSQL connection to the sandbox's main (the harness's checks run SQL there): its
        default database, or `database` of a fixture that loads more than one."""
        ...

    async def target_for(self, sandbox: TrialSandbox, grant: Grant | None = None) -> MCPTarget:
        """The MCP target of one trial: pinned to its sandbox (a URL grant, or a stdio server started
        on the sandbox's own database) where the server allows, with the case's grant."""
        ...

    async def capture(self, sandbox: TrialSandbox, *, timeout: float, after_model: bool = False) -> Snapshot:
        """Main's state now; `after_model`: the model has had it, so a failure may be its doing."""
        ...

    async def objects_left(self, sandbox: TrialSandbox, harness_made: set[str]) -> list[str]:
        """What the model created and did not remove (Neon: the temporary branches it left); the
        record's `branches_left`."""
        ...

    async def capture_copies(
        self, sandbox: TrialSandbox, harness_made: set[str], *, timeout: float
    ) -> dict[str, Snapshot]:
        """Each copy of main the model made and still has (not the harness's own), read now, by id:
        where it staged or tried a change, as the user is asked about it."""
        ...

    async def start_expected(self, sandbox: TrialSandbox, run_id: str, label: str) -> ExpectedStart:
        """Copy main as the model finds it, for the expected state."""
        ...

    async def finish_expected(self, start: ExpectedStart, case: Case, timeout: float) -> Snapshot:
        """The copy with the case's reference change applied, read: what main should now be."""
        ...

    async def drop_expected(self, start: ExpectedStart) -> str | None:
        """Remove the copy (awaited even when the trial is cancelled); the problem, if any."""
        ...

    async def model_sql_running(self, sandbox: TrialSandbox, within: float) -> bool:
        """Whether SQL the model sent is still running in the sandbox (a timeout is then its doing)."""
        ...

    def follow(self, endpoints: ServerEndpoints) -> None:
        """Point at a local server that was restarted on new endpoints."""
        ...

    def on_lost_server(self, recover: Callable[[], Awaitable[str | None]]) -> None:
        """What to call when the family's API loses its connection (the runner restarts the server)."""
        ...

    async def collect_leftovers(self, results_dir: Path, run_id: str) -> None:
        """At a run's start on a server the harness started: delete what runs that are over (killed,
        or ended without cleaning up) left on it; never `run_id`'s or any live run's."""
        ...

    async def aclose(self) -> None: ...


class ServerFamily(Protocol):
    """A family: how its backends are made for a run, what its tools are for, its terms for a case."""

    name: str  # the record's `server_family`
    roles: ToolRoles
    answers: AnswerReader  # how its answers name what a call made (the control agents read them so)

    def case_for(self, case: Case) -> Case:
        """The case in this family's terms; `harness.servers.roles.CaseNotServed` when it cannot run it."""
        ...

    def check_start(self, settings: Settings, fixtures: Iterable[str]) -> None:
        """Before the first trial: install what the server needs, refuse what cannot run (ConfigError)."""
        ...

    def local_backend(self, settings: Settings, endpoints: ServerEndpoints, token: str | None) -> TrialBackend:
        """For a server the harness started itself (or a stdio server beside it)."""
        ...

    def remote_backend(self, settings: Settings) -> TrialBackend:
        """For a server somewhere else (a URL, Neon's cloud, a stdio server on a remote API)."""
        ...

    def refused_key(self, settings: Settings, error: BaseException) -> ConfigError | None:
        """The line that stops the run when `error`, met while asking the server its tools, is the
        server or its API refusing the key (every trial would be refused alike); else None."""
        ...
