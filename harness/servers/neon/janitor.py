"""Delete what crashed runs left behind: `python -m harness.servers.neon.janitor [--older-than 1h] [--dry-run]`.

Why by name and age: a trial's sandbox is deleted in every outcome the process survives, but a
killed process leaves its project (or, on a Neon pool, its branches). Projects named with the eval
prefix and older than the threshold are deleted; on pool projects, branches that are neither the
default nor the golden branch and are older than the threshold are deleted. Pool projects and
golden branches are never deleted. A run killed outright (SIGKILL) is known by its owner entry
(`harness.liveness`): its projects are deleted whatever their age, and the local server it left
running in its own session is stopped, with its temp folder.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from harness import liveness
from harness.config import ConfigError, Settings
from harness.server_process import LocalServer
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.conventions import EVAL_PREFIX
from harness.servers.neon.sandbox import project_name

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass
class SweepReport:
    """What was (or, in a dry run, would be) deleted."""

    projects: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)  # "project_id/branch_id (name)"
    errors: list[str] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)  # orphaned local servers stopped


def parse_age(text: str) -> timedelta:
    """'90s', '30m', '1h', '2d' (or a bare number of seconds) as a timedelta."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not an age: {text!r} (use e.g. 30m, 1h, 2d)")
    return timedelta(seconds=float(match.group(1)) * UNITS[match.group(2) or "s"])


def _created(item: dict[str, object]) -> datetime | None:
    raw = item.get("created_at")
    if not isinstance(raw, str):
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _old(item: dict[str, object], cutoff: datetime) -> bool:
    created = _created(item)
    return created is not None and created <= cutoff


async def sweep(
    api: NeonAPI,
    *,
    older_than: timedelta,
    prefix: str = EVAL_PREFIX,
    pool: tuple[str, ...] = (),
    golden: str = "golden",
    dry_run: bool = False,
    killed_runs: tuple[str, ...] = (),
) -> SweepReport:
    """Delete leftovers older than `older_than`, and those of `killed_runs` whatever their age."""
    report = SweepReport()
    cutoff = datetime.now(UTC) - older_than
    killed = tuple(project_name(run_id, "") for run_id in killed_runs)
    for project in await api.list_projects(search=prefix):
        name = str(project.get("name", ""))
        if project["id"] in pool or not name.startswith(prefix):
            continue
        if not _old(project, cutoff) and not (killed and name.startswith(killed)):
            continue
        report.projects.append(project["id"])
        if not dry_run:
            try:
                await api.delete_project(project["id"])
            except Exception as error:
                report.errors.append(f"project {project['id']}: {error}")
    for project_id in pool:
        branches = await api.list_branches(project_id)
        for branch in branches:
            if branch.get("default") or branch.get("name") == golden or not _old(branch, cutoff):
                continue
            report.branches.append(f"{project_id}/{branch['id']} ({branch.get('name')})")
            if not dry_run:
                try:
                    await api.delete_branch(project_id, branch["id"])
                except Exception as error:
                    report.errors.append(f"branch {project_id}/{branch['id']}: {error}")
    return report


async def _main(args: argparse.Namespace) -> int:
    settings = Settings.from_env(warn=False)
    stopped: list[str] = []
    if not args.dry_run:
        # First, so that requests a killed run left in flight finish (or stop) before the sweep looks.
        stopped = [str(entry.pid) for entry in liveness.orphan_servers() if liveness.stop_orphan(entry)]
    server: LocalServer | None = None
    kind = settings.server_kind
    key = settings.neon_api_key.get_secret_value() if settings.neon_api_key else None
    if kind == "neon":
        api = NeonAPI(settings.neon_api_url, key)
    elif kind == "url":
        root = settings.server.rstrip("/").removesuffix("/mcp")
        api = NeonAPI(root + "/api/v2", key)
    else:
        server = LocalServer()
        endpoints = await server.start()
        api = NeonAPI(endpoints.api_url, None, operation_poll=0.05)
    killed = liveness.dead_runs()  # registered by a process that is gone: killed, never cleaned up
    try:
        pool = settings.neon_project_pool if kind == "neon" else ()
        report = await sweep(
            api,
            older_than=args.older_than,
            prefix=args.prefix,
            pool=pool,
            golden=settings.neon_golden_branch,
            dry_run=args.dry_run,
            killed_runs=tuple(entry.run_id for entry in killed),
        )
    finally:
        await api.aclose()
        if server is not None:
            server.stop()
    verb = "would delete" if args.dry_run else "deleted"
    report.servers = stopped
    if not args.dry_run and not report.errors:
        for entry in killed:
            liveness.forget(entry)
    for pid in report.servers:
        print(f"stopped local server {pid} (its run was killed)")
    for project_id in report.projects:
        print(f"{verb} project {project_id}")
    for branch in report.branches:
        print(f"{verb} branch {branch}")
    for error in report.errors:
        print(f"error: {error}", file=sys.stderr)
    print(
        f"janitor: {verb} {len(report.projects)} project(s) and {len(report.branches)} branch(es); "
        f"stopped {len(report.servers)} orphaned local server(s)"
    )
    return 1 if report.errors else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.servers.neon.janitor", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--older-than", type=parse_age, default=timedelta(hours=1), help="minimum age (default 1h)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    parser.add_argument("--prefix", default=EVAL_PREFIX, help=f"project name prefix (default {EVAL_PREFIX})")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_main(args))
    except ConfigError as error:
        print(f"janitor: configuration error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
