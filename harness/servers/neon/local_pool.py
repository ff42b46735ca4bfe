"""Local runs reuse a few projects per fixture, so that trials on one project share their tool prefix.

Why: a pinned MCP session's notice names its project in every tool description (as Neon's server
does). With a fresh project per trial every trial has its own tool list, so a model's prompt cache
starts cold each time (a cache write of the whole tool list on Claude, the whole prompt again on a
local model). A project serves one trial at a time, as in Neon pool mode, and is laid out the same
way (`GoldenRestore`): the fixture on a root branch `golden`, `main` branched from it; before each
trial main is restored from golden, a template clone, faster than loading the fixture SQL.

Lifecycle: a project is created when a trial needs one and every project of its fixture is held
(so the pool grows to the run's concurrency, or at most `EVAL_LOCAL_POOL` per fixture), and all of
them are deleted when the runner closes or its event loop shuts down. The second covers the CLI,
which never closes runners: at the end of a run, and on Ctrl-C or SIGTERM, `asyncio.run` cancels
every task, and the pool's keeper task deletes the projects then, once their trials let go. A
killed run's projects carry its run id (`eval-<run>-pool-...`), so the janitor removes them.

A trial that changes golden (it is a branch the model can see and name), or leaves settings on the
project's role, would hand the next trial a different fixture: after each restore main is compared
with the project's first state (`pool_check`), and a project that differs is deleted and replaced
before the trial starts, the difference noted on the trial's record.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from harness.cases import Case, fixture_databases
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.sandbox import (
    GoldenRestore,
    PoolProjectChanged,
    SandboxInfo,
    complete,
    create_golden_project,
    failure,
    project_name,
    read_fixture,
    shielded,
)
from harness.servers.neon.state import DEFAULT_CAPTURE_TIMEOUT

GOLDEN = "golden"


class PoolClosedError(RuntimeError):
    """A trial asked for a project after the pool was closed (the run is ending)."""


class LocalProjectPool:
    """Projects made on demand per fixture, one holder each at a time, all deleted by `aclose`."""

    def __init__(self, api: NeonAPI, run_id: str, limit: int | None = None, golden: str = GOLDEN) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"a local project pool needs room for at least one project per fixture, got {limit}")
        self.api = api
        self.run_id = run_id
        self.limit = limit  # projects per fixture at most; None: as many as trials run at once
        self.golden = golden
        self.token = secrets.token_hex(3)  # two runners of one run never take each other's projects
        self.fixture_of: dict[str, str] = {}  # every project made (and not yet deleted) -> its fixture
        self.fresh: set[str] = set()  # projects no trial has used yet: main is golden's copy already
        self._free: dict[str, list[str]] = {}
        self._made: dict[str, int] = {}  # projects per fixture, made or being made
        self._serial = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._keeper: asyncio.Task[None] | None = None
        self._creating = 0
        self.closed = False
        self.close_error: str | None = None  # set when a project could not be deleted at the end

    @property
    def prefix(self) -> str:
        """Every project of this pool is named with this prefix (the janitor's mark comes first)."""
        return project_name(self.run_id, f"pool-{self.token}-")

    def busy(self) -> int:
        """Projects a trial holds or a create makes right now (zero: the pool may be deleted)."""
        free = sum(len(ids) for ids in self._free.values())
        return self._creating + len(self.fixture_of) - free

    async def take(self, case: Case) -> str:
        """A project holding the case's fixture, made when every one of them is held (and the limit
        allows), else the first one given back; hand it back with `give_back`."""
        fixture = case.fixture
        while True:
            if self.closed:
                raise PoolClosedError("the local project pool is closed: the run is ending")
            free = self._free.setdefault(fixture, [])
            if free:
                return free.pop()
            if self.limit is None or self._made.get(fixture, 0) < self.limit:
                break
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self._made[fixture] = self._made.get(fixture, 0) + 1
        self._serial += 1
        name = f"{self.prefix}{self._serial}-{fixture}"[:64]
        made: list[str] = []
        self._creating += 1
        try:
            # Shielded: a create cut off by a cancellation finishes, so the project is known and deleted.
            await shielded(functools.partial(self._create, case, name, made), attempts=1)
        except BaseException:
            if made:  # made, then the caller was cancelled: the project is good, another trial takes it
                self._free.setdefault(fixture, []).append(made[0])
            else:
                self._made[fixture] -= 1
            raise
        finally:
            self._creating -= 1
            self._wake()
        return made[0]

    async def _create(self, case: Case, name: str, made: list[str]) -> None:
        """A pool project: the fixture on root branch golden, main branched from it as the default."""
        scripts = read_fixture(case)
        self._start_keeper()
        ids: list[str] = []
        try:
            project_id = await create_golden_project(self.api, name, scripts, self.golden, made=ids.append)
            self.fixture_of[project_id] = case.fixture
        except BaseException:
            for project_id in ids:
                self.fixture_of.setdefault(project_id, case.fixture)
                with contextlib.suppress(Exception):  # else the pool's last sweep finds it by name
                    await self._delete(project_id)
            raise
        self.fresh.add(project_id)
        made.append(project_id)

    async def give_back(self, project_id: str, reuse: bool = True) -> bool:
        """Free the project for the next trial (True); delete it instead (False) when the trial's sandbox
        failed or found the project changed (`reuse=False`: a restore or clean-up cut off by a dying
        server may have left it half done), or when the pool is closing. Runs to the end even if the
        caller is cancelled."""
        self.fresh.discard(project_id)
        fixture = self.fixture_of.get(project_id)
        if fixture is None:
            return True
        cancelled = False
        kept = reuse and not self.closed
        if kept:
            self._free.setdefault(fixture, []).append(project_id)
        else:
            _, cancelled = await complete(functools.partial(self._delete, project_id))
            self._made[fixture] -= 1
        self._wake()
        if cancelled:
            raise asyncio.CancelledError()
        return kept

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def _delete(self, project_id: str) -> None:
        fixture = self.fixture_of.pop(project_id, None)
        if fixture is not None and project_id in self._free.get(fixture, []):
            self._free[fixture].remove(project_id)
        self.fresh.discard(project_id)
        await self.api.delete_project(project_id)

    def _start_keeper(self) -> None:
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.get_running_loop().create_task(self._keep(), name="local-project-pool")

    async def _keep(self) -> None:
        """Wait for the event loop's shutdown (which cancels every task), then delete the pool."""
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            task, _ = await complete(self._drain_and_delete)
            error = failure(task)
            if error is not None:
                self.close_error = f"{type(error).__name__}: {error}"
                print(
                    f"harness: local project pool {self.prefix}*: not all deleted ({self.close_error}); "
                    "`python -m harness.servers.neon.janitor` removes them",
                    file=sys.stderr,
                    flush=True,
                )

    async def aclose(self) -> None:
        """Delete every project, once the trials holding one have let go of it; safe to repeat.

        Never raises: a project it could not delete is named on stderr and in `close_error` (the
        runner closing must still close its other clients and stop its server)."""
        self.closed = True
        keeper, self._keeper = self._keeper, None
        if keeper is not None:  # started before the first create: no keeper, no project
            keeper.cancel()
            await asyncio.wait([keeper])

    async def _drain_and_delete(self) -> list[str]:
        """Close the pool, wait for held projects to come back, then delete every project it made
        (and any of its name the server lists: a create cut off mid-request may have made one)."""
        self.closed = True
        self._wake()
        while self.busy():
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        listed = [str(p["id"]) for p in await self.api.list_projects(search=self.prefix)]
        deleted: list[str] = []
        for project_id in sorted({*self.fixture_of, *listed}):
            await self._delete(project_id)
            deleted.append(project_id)
        return deleted


class LocalPoolSandbox(GoldenRestore):
    """Trials on a `LocalProjectPool`: main restored from golden per trial and checked against the
    fixture (a project that differs is replaced), the trial's branches deleted after."""

    REPLACEMENTS = 3  # projects tried for one trial before the pool gives up

    def __init__(
        self,
        api: NeonAPI,
        run_id: str,
        limit: int | None = None,
        golden: str = GOLDEN,
        capture_timeout: float = DEFAULT_CAPTURE_TIMEOUT,
    ) -> None:
        self.api = api
        self.run_id = run_id
        self.golden = golden
        self.capture_timeout = capture_timeout
        self.references = {}
        self.pool = LocalProjectPool(api, run_id, limit, golden)

    @asynccontextmanager
    async def open(self, case: Case, label: str) -> AsyncIterator[SandboxInfo]:
        notes: list[str] = []
        for _ in range(self.REPLACEMENTS):
            project_id = await self.pool.take(case)
            fresh = project_id in self.pool.fresh
            difference: list[str] = []
            healthy = False  # reused only when its restore, its check, the trial and the clean-up went through
            try:
                async with self._restored(project_id, restore=not fresh) as info:
                    self.pool.fresh.discard(project_id)
                    info.databases = fixture_databases(case)
                    difference = await self.verify(project_id, info)
                    if not difference:
                        info.notes.extend(notes)
                        yield info
                        healthy = info.cleanup_error is None
            finally:
                await self.pool.give_back(project_id, reuse=healthy)
                if difference:
                    self.references.pop(project_id, None)
            if not difference:
                return
            notes.append(
                f"pool project {project_id} no longer held fixture {case.fixture!r} after its restore "
                f"({'; '.join(difference[:5])}): deleted and replaced before this trial"
            )
            print(f"harness: {notes[-1]}", file=sys.stderr, flush=True)
        raise PoolProjectChanged("; ".join(notes))

    async def aclose(self) -> None:
        await self.pool.aclose()
