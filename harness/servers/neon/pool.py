"""The process's one pool of dedicated Neon projects, each holding one fixture on its golden branch.

Why one per process: `braintrust eval` runs every evaluator of a run (models x scenarios x decoy
counts) in one process, each with its own runner. If each runner had its own queue over the same
project ids, two trials could hold one project at once and restore main under each other. So
every runner, and the expected-state replay, draws from the same queue per fixture.

`NEON_PROJECT_POOL` names the projects with the fixture each holds: `blog:proj-a,blog:proj-b,
shop:proj-c` (what `python -m harness.pool setup` prints). A case is served only by a project
holding its fixture; a fixture with no project stops the run at start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager

from harness.config import ConfigError

ANY_FIXTURE = "*"  # a project that serves every case (bare ids given in code, never in NEON_PROJECT_POOL)


def parse_pool(entries: Iterable[str]) -> dict[str, list[str]]:
    """`fixture:project_id` entries as {fixture: [project ids]}; raise ConfigError naming a bad entry."""
    pool: dict[str, list[str]] = {}
    seen: set[str] = set()
    for entry in entries:
        fixture, sep, project_id = entry.partition(":")
        fixture, project_id = fixture.strip(), project_id.strip()
        if not sep or not fixture or not project_id:
            raise ConfigError(
                f"NEON_PROJECT_POOL: {entry!r} names no fixture; write fixture:project_id "
                "(`python -m harness.pool setup` creates the projects and prints the line)"
            )
        if project_id in seen:
            raise ConfigError(f"NEON_PROJECT_POOL: project {project_id} is listed twice")
        seen.add(project_id)
        pool.setdefault(fixture, []).append(project_id)
    return pool


class ProjectPool:
    """One trial (or expected-state replay) per project at a time, per fixture, for a whole process."""

    def __init__(self, projects: dict[str, list[str]]) -> None:
        if not any(projects.values()):
            raise ValueError("a project pool needs at least one project")
        self.projects = {fixture: list(ids) for fixture, ids in projects.items() if ids}
        # Queues belong to an event loop; `Eval()` outside the CLI runs one loop per call.
        self._queues: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Queue[str]] = {}

    @classmethod
    def of(cls, project_ids: Sequence[str]) -> ProjectPool:
        """A pool of projects that each serve every case (one fixture for all, set up by hand)."""
        return cls({ANY_FIXTURE: list(project_ids)})

    @property
    def all_ids(self) -> list[str]:
        return [project_id for ids in self.projects.values() for project_id in ids]

    def fixture_of(self, project_id: str) -> str | None:
        return next((fixture for fixture, ids in self.projects.items() if project_id in ids), None)

    def missing(self, fixtures: Iterable[str]) -> list[str]:
        """Fixtures no project of the pool holds."""
        if ANY_FIXTURE in self.projects:
            return []
        return sorted({fixture for fixture in fixtures if fixture not in self.projects})

    def _queue(self, fixture: str) -> asyncio.Queue[str]:
        loop = asyncio.get_running_loop()
        for stale in [k for k in self._queues if k[0].is_closed()]:
            del self._queues[stale]
        key = fixture if fixture in self.projects else ANY_FIXTURE
        if key not in self.projects:
            raise ConfigError(
                f"NEON_PROJECT_POOL holds no project with the fixture '{fixture}' "
                f"(it has: {', '.join(sorted(self.projects))})"
            )
        if (loop, key) not in self._queues:
            queue: asyncio.Queue[str] = asyncio.Queue()
            for project_id in self.projects[key]:
                queue.put_nowait(project_id)
            self._queues[(loop, key)] = queue
        return self._queues[(loop, key)]

    @asynccontextmanager
    async def hold(self, fixture: str) -> AsyncIterator[str]:
        """A project holding `fixture`, for the duration of the block; waits while all are held."""
        queue = self._queue(fixture)
        project_id = await queue.get()
        try:
            yield project_id
        finally:
            queue.put_nowait(project_id)


_POOLS: dict[tuple[str, tuple[str, ...]], ProjectPool] = {}


def shared_pool(api_url: str, entries: Sequence[str]) -> ProjectPool:
    """The process's pool for these projects on this API: every runner of the run gets the same one."""
    key = (api_url, tuple(entries))
    if key not in _POOLS:
        _POOLS[key] = ProjectPool(parse_pool(entries))
    return _POOLS[key]
