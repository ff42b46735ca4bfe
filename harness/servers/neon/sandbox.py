"""Per-trial isolation: every trial gets a main branch nobody else touches, and leaves nothing behind.

Three implementations behind one interface:
- `LocalProjectSandbox`: a fresh project per trial (any account that may create projects, or the
  local server with `EVAL_LOCAL_POOL=off`), loaded with the case's fixture, deleted afterwards in
  every outcome.
- `NeonPoolSandbox`: dedicated Neon projects, one trial per project at a time; main is restored from
  a golden branch before each trial and only the branches the trial created are deleted after.
- `LocalPoolSandbox` (`harness.servers.neon.local_pool`): the same restore on a few projects the run
  creates on the local server and deletes at its end, so trials share their tool prefix.
Cleanup runs shielded from cancellation and is awaited, so a cancelled or timed-out trial cannot
leave a project or branch behind, nor delete a neighbour's.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from harness.cases import Case, fixture_databases, fixture_scripts, note_loading
from harness.recording.records import Snapshot
from harness.run.signals import cleanup_guard
from harness.servers.neon.api import NeonAPI, NeonAPIError
from harness.servers.neon.conventions import DEFAULT_DATABASE, EVAL_PREFIX
from harness.servers.neon.pool import ProjectPool
from harness.servers.neon.pool_check import state_difference
from harness.servers.neon.state import DEFAULT_CAPTURE_TIMEOUT, capture_databases
from harness.servers.neon.state import connect as state_connect

DEFAULT_ROLE = "neondb_owner"
CLEANUP_TIMEOUT = 180.0

T = TypeVar("T")


@dataclass
class SandboxInfo:
    """Where a trial runs: the project, its main (default) branch, database and role."""

    project_id: str
    branch_id: str
    branch_name: str
    database: str = DEFAULT_DATABASE
    role: str = DEFAULT_ROLE
    branches_before: set[str] = field(default_factory=set)
    cleanup_error: str | None = None  # set when cleanup failed (recorded; the run then fails)
    before: Snapshot | None = None  # main as the sandbox checked it at open (a pool project), if it did
    notes: list[str] = field(default_factory=list)  # what the sandbox did that the record should say
    # Every database main holds for the trial (a folder fixture's), the default first: what is captured.
    databases: tuple[str, ...] = (DEFAULT_DATABASE,)

    # The seam's terms (`harness.servers.family.TrialSandbox`): the project is the sandbox, its default
    # branch the trial's main.
    @property
    def sandbox_id(self) -> str:
        return self.project_id

    @property
    def main_id(self) -> str:
        return self.branch_id

    @property
    def main_name(self) -> str:
        return self.branch_name


class Sandbox(Protocol):
    """Opens an isolated main branch for one trial (the expected state is built from a branch of it:
    `harness.servers.neon.expected`)."""

    api: NeonAPI

    def open(self, case: Case, label: str) -> Any:  # an async context manager yielding SandboxInfo
        ...

    async def branches_left(self, info: SandboxInfo, harness_branches: set[str]) -> list[str]: ...

    async def aclose(self) -> None:
        """Delete what the sandbox keeps between trials (the runner is closing)."""


async def branches_created(
    api: NeonAPI, info: SandboxInfo, harness_branches: set[str], golden: str | None = None
) -> list[str]:
    """Names (or ids) of the branches created during the trial and still there, whatever their names:
    not default, not golden, not there at the start, and not the harness's own (by id)."""
    branches = await api.list_branches(info.project_id)
    return sorted(
        str(b.get("name") or b["id"])
        for b in branches
        if not b.get("default")
        and b["id"] not in info.branches_before
        and b["id"] not in harness_branches
        and (golden is None or b.get("name") != golden)
    )


async def complete(
    make: Callable[[], Awaitable[T]], timeout: float = CLEANUP_TIMEOUT, attempts: int = 3
) -> tuple[asyncio.Task[T], bool]:
    """Run cleanup to completion even if the caller is cancelled: (the finished task, caller cancelled?).

    The cleanup task itself may be cancelled too: at shutdown (Ctrl-C) `asyncio.run` cancels every
    task, shielded ones included. A cleanup cancelled that way is started again (the new task is not
    on the shutdown's list) up to `attempts` times, and counts as a cancellation of the caller.
    """
    with cleanup_guard():
        return await _complete(make, timeout, attempts)


async def _complete(make: Callable[[], Awaitable[T]], timeout: float, attempts: int) -> tuple[asyncio.Task[T], bool]:
    caller_cancelled = False
    for _ in range(attempts):
        task: asyncio.Task[T] = asyncio.ensure_future(asyncio.wait_for(make(), timeout))
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                caller_cancelled = caller_cancelled or not task.done()
            except Exception:
                break  # the cleanup failed: the caller reads the error from the task
        if not task.cancelled():
            break
        caller_cancelled = True  # only a shutdown cancels the cleanup task itself
    return task, caller_cancelled


async def shielded(make: Callable[[], Awaitable[T]], timeout: float = CLEANUP_TIMEOUT, attempts: int = 3) -> T:
    """`complete`, then re-raise the caller's cancellation, or return the result (or raise its error)."""
    task, cancelled = await complete(make, timeout, attempts)
    if cancelled:
        raise asyncio.CancelledError()
    return task.result()


def failure(task: asyncio.Task[Any]) -> BaseException | None:
    """What a finished cleanup task raised, if anything (a cancelled one counts as failed)."""
    return asyncio.CancelledError() if task.cancelled() else task.exception()


def project_name(run_id: str, label: str) -> str:
    """A recognisable, bounded project name: `eval-<run>-<label>`."""
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{run_id}-{label}")
    return (EVAL_PREFIX + clean)[:64]


async def execute_script(uri: str, script: str, *, transaction: bool, timeout: float = CLEANUP_TIMEOUT) -> None:
    """Run a multi-statement SQL script (simple query protocol), optionally as one transaction.

    The harness's own SQL (a fixture, a case's reference SQL): its session pins the settings a
    model could have left on the role (a read-only default, a 1 ms statement timeout)."""
    async with await state_connect(uri, timeout, search_path='"$user",public') as conn:
        if transaction:
            async with conn.transaction():
                await conn.execute(script.encode())
        else:
            await conn.execute(script.encode())


FixtureScripts = Sequence[tuple[str, str]]  # (database, SQL text), the default database first


def read_fixture(case: Case) -> list[tuple[str, str]]:
    """The case's fixture as (database, SQL text) pairs, read now."""
    return [(database, path.read_text(encoding="utf-8")) for database, path in fixture_scripts(case)]


async def load_fixture(api: NeonAPI, project_id: str, branch_id: str, role: str, scripts: FixtureScripts) -> None:
    """Each script into its database on the branch, each as one transaction; a database other than
    the default is made first (`POST .../databases`, owned by the project's role)."""
    for database, script in scripts:
        if database != DEFAULT_DATABASE:
            await api.create_database(project_id, branch_id, database, role)
        uri = await api.connection_uri(project_id, branch_id, database, role)
        try:
            await execute_script(uri, script, transaction=True)
        except Exception as error:
            note_loading(error, database)
            raise


async def create_golden_project(
    api: NeonAPI, name: str, scripts: FixtureScripts, golden: str, made: Callable[[str], None] = lambda _: None
) -> str:
    """A project with the fixture on its root branch `golden` and `main` branched from it as the default; its id.

    `made(project_id)` hears of the project as soon as it exists, so that a failure later on (the
    caller deletes the project then) cannot leave it unknown."""
    body = await api.create_project(name, branch={"name": golden})
    project_id = str(body["project"]["id"])
    made(project_id)
    root = str(body["branch"]["id"])
    role = next((str(r["name"]) for r in body.get("roles", []) if not r.get("protected")), DEFAULT_ROLE)
    await load_fixture(api, project_id, root, role, scripts)
    main = await api.create_branch(project_id, parent_id=root, name="main", expires_in=None)
    await api.set_default_branch(project_id, main["branch"]["id"])
    return project_id


def _role_from(body: dict[str, Any]) -> str:
    roles = [r.get("name") for r in body.get("roles", []) if r.get("name") and not r.get("protected")]
    return str(roles[0]) if roles else DEFAULT_ROLE


def _database_from(body: dict[str, Any]) -> str:
    names = [d.get("name") for d in body.get("databases", []) if d.get("name")]
    return DEFAULT_DATABASE if DEFAULT_DATABASE in names or not names else str(names[0])


class LocalProjectSandbox:
    """A throwaway project per trial."""

    def __init__(self, api: NeonAPI, run_id: str) -> None:
        self.api = api
        self.run_id = run_id

    async def _create(self, case: Case, label: str) -> SandboxInfo:
        name = project_name(self.run_id, label)
        try:
            body = await self.api.create_project(name)
        except NeonAPIError as error:
            if error.status is not None or self.api.recover is None:
                raise
            # No answer (the local server went away mid-request and was restarted): whatever it made
            # of the request is removed, and the project is created again.
            try:
                stale = await self._projects_named(name, waits=(0.0,))
            except NeonAPIError:
                raise error from None
            for project_id in stale:
                await self.api.delete_project(project_id)
            body = await self.api.create_project(name)
        project_id = body["project"]["id"]
        branch = body.get("branch") or await self.api.default_branch(project_id)
        info = SandboxInfo(project_id, branch["id"], branch.get("name", "main"), _database_from(body), _role_from(body))
        return info

    async def _load_fixture(self, info: SandboxInfo, case: Case) -> None:
        info.databases = fixture_databases(case)
        await load_fixture(self.api, info.project_id, info.branch_id, info.role, read_fixture(case))

    async def _projects_named(self, name: str, waits: tuple[float, ...] = (0.0, 0.5, 1.5)) -> list[str]:
        """Ids of projects called `name`, looked for a few times: a create request cut off mid-flight
        may still be completing on the server. Names carry a random part, so they are this trial's."""
        for wait in waits:
            await asyncio.sleep(wait)
            found = await self.api.list_projects(search=name)
            ids = [str(project["id"]) for project in found if project.get("name") == name]
            if ids:
                return ids
        return []

    @asynccontextmanager
    async def open(self, case: Case, label: str) -> AsyncIterator[SandboxInfo]:
        created: list[str] = []

        async def create() -> SandboxInfo:
            info = await self._create(case, label)
            created.append(info.project_id)
            return info

        info: SandboxInfo | None = None
        name = project_name(self.run_id, label)
        cut_off = False
        try:
            # Creation is shielded too: a cancelled create must still be known, so it can be deleted.
            # It is never retried: a create cut off at shutdown may still have made the project.
            try:
                info = await shielded(create, attempts=1)
            except asyncio.CancelledError:
                cut_off = not created
                raise
            await self._load_fixture(info, case)
            yield info
        finally:
            cancelled = False
            if cut_off:  # the create was cut off mid-request: the project may exist all the same
                found, cancelled = await complete(functools.partial(self._projects_named, name))
                if failure(found) is None:
                    created.extend(found.result())
            for project_id in created:
                deleted, interrupted = await complete(functools.partial(self.api.delete_project, project_id))
                cancelled = cancelled or interrupted
                error = failure(deleted)
                if error is not None and info is not None:
                    info.cleanup_error = f"delete project {project_id}: {error!r}"
            if cancelled:
                raise asyncio.CancelledError()

    async def branches_left(self, info: SandboxInfo, harness_branches: set[str]) -> list[str]:
        return await branches_created(self.api, info, harness_branches)

    async def aclose(self) -> None:
        """Nothing to delete: every trial's project went with its trial."""


class PoolProjectChanged(RuntimeError):
    """A pool project's main, restored from golden, is not the fixture it held (a model changed golden)."""


class GoldenRestore:
    """Main of a project laid out for reuse, restored from its golden branch for each trial it serves.

    The layout (Neon pool mode's, and the local pool's): the fixture on a root branch named `golden`,
    `main` branched from it as the default branch. Neon refuses to restore a branch that has
    children, so nothing may branch from main except the trial's own (deleted after the trial);
    branch anything else from golden.
    """

    api: NeonAPI
    golden: str
    capture_timeout: float = DEFAULT_CAPTURE_TIMEOUT
    # project id -> main as it held the fixture (its first capture in this run): what every restore must give
    references: dict[str, Snapshot]

    async def verify(self, project_id: str, info: SandboxInfo) -> list[str]:
        """Capture main (it becomes the trial's `before`) and say how it differs from the fixture."""
        current = await capture_databases(
            self.api, project_id, info.branch_id, info.databases, info.role, timeout=self.capture_timeout
        )
        reference = self.references.get(project_id)
        if reference is None and not current.error:
            self.references[project_id] = reference = current
        difference = state_difference(reference, current) if reference is not None else [str(current.error)]
        if not difference:
            info.before = current
        return difference

    async def _describe(self, project_id: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        branches = await self.api.list_branches(project_id)
        default = next((b for b in branches if b.get("default")), None)
        golden = next((b for b in branches if b.get("name") == self.golden), None)
        if default is None:
            raise ValueError(f"pool project {project_id} has no default branch")
        if golden is None:
            raise ValueError(f"pool project {project_id} has no branch named '{self.golden}' (NEON_GOLDEN_BRANCH)")
        return default, golden, branches

    async def _role(self, project_id: str, branch_id: str) -> str:
        try:
            roles = await self.api.branch_roles(project_id, branch_id)
        except Exception:
            return DEFAULT_ROLE
        return _role_from({"roles": roles})

    async def _delete_new_branches(self, project_id: str, keep: set[str]) -> list[str]:
        deleted: list[str] = []
        branches = await self.api.list_branches(project_id)
        # Children first: a branch with children cannot be deleted.
        by_depth = sorted(branches, key=lambda b: b.get("parent_id") in keep)
        for branch in by_depth:
            name = str(branch.get("name") or "")
            if branch["id"] in keep or branch.get("default") or name == self.golden:
                continue
            await self.api.delete_branch(project_id, branch["id"])
            deleted.append(branch["id"])
        return deleted

    @asynccontextmanager
    async def _restored(self, project_id: str, *, restore: bool = True) -> AsyncIterator[SandboxInfo]:
        """Main of a project this trial holds, restored from golden; the trial's branches deleted after.

        `restore=False` for a project whose main was branched from golden a moment ago (nothing to undo)."""
        info: SandboxInfo | None = None
        try:
            default, golden, branches = await self._describe(project_id)
            # Children of main can only be leftovers of a crashed trial (this process holds the project
            # alone), and Neon will not restore a branch that has children: remove them first.
            stale = [b for b in branches if b.get("parent_id") == default["id"] and b["id"] != golden["id"]]
            for branch in stale:
                await self.api.delete_branch(project_id, branch["id"])
            keep = {b["id"] for b in branches} - {b["id"] for b in stale}
            if restore or stale:
                await self.api.restore_branch(project_id, default["id"], golden["id"])
            role = await self._role(project_id, default["id"])
            info = SandboxInfo(project_id, default["id"], default.get("name", "main"), DEFAULT_DATABASE, role, keep)
            yield info
        finally:
            try:
                if info is not None:
                    keep_ids = info.branches_before
                    await shielded(lambda: self._delete_new_branches(project_id, keep_ids))
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if info is not None:
                    info.cleanup_error = f"delete trial branches of {project_id}: {error}"

    async def branches_left(self, info: SandboxInfo, harness_branches: set[str]) -> list[str]:
        return await branches_created(self.api, info, harness_branches, self.golden)


class NeonPoolSandbox(GoldenRestore):
    """Dedicated projects, one trial each at a time; main restored from the golden branch per trial.

    Set each pool project up with golden as the parent of the default branch (`GoldenRestore`):
    `python -m harness.pool setup --apply` does it.
    """

    def __init__(
        self,
        api: NeonAPI,
        pool: ProjectPool | Sequence[str],
        golden: str = "golden",
        *,
        run_id: str = "",
        capture_timeout: float = DEFAULT_CAPTURE_TIMEOUT,
    ) -> None:
        self.api = api
        self.pool = pool if isinstance(pool, ProjectPool) else ProjectPool.of(pool)
        self.golden = golden
        self.run_id = run_id
        self.capture_timeout = capture_timeout
        self.references = {}

    @asynccontextmanager
    async def open(self, case: Case, label: str) -> AsyncIterator[SandboxInfo]:
        async with self.pool.hold(case.fixture) as project_id, self._restored(project_id) as info:
            info.databases = fixture_databases(case)
            difference = await self.verify(project_id, info)
            if difference:
                # The user's own project: not ours to delete. Named, so they can set it up again.
                raise PoolProjectChanged(
                    f"pool project {project_id} no longer holds fixture {case.fixture!r} as it did at its first "
                    f"trial of this run ({'; '.join(difference[:5])}); set it up again with "
                    "`python -m harness.pool setup --apply`"
                )
            yield info

    async def aclose(self) -> None:
        """Nothing to delete: the pool's projects outlive the run."""
