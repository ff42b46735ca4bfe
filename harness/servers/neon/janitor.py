"""Delete what crashed runs left behind: `python -m harness.servers.neon.janitor [--older-than 1h] [--dry-run]`.

Why so narrow: the account may hold anything, including a user's production projects. A trial's
sandbox is deleted in every outcome the process survives, but a killed process leaves its
project (or, on a pool project, its expected-state branch). So the janitor deletes only what the
suite created *and marked*: names that start with the eval prefix followed by a run id the suite
recorded (`results/<run id>/run.json`, or `--run-id`), older than the threshold. In pool mode it
deletes no project at all, only marked branches of pool projects, never a default or golden branch.

A run killed outright (SIGKILL) is known by its owner entry (`harness.run.liveness`): its marked
leftovers are deleted whatever their age, and the local server it left running is stopped first.
So are those of every run recorded in `results/` that no live process runs any more (it ended, and
what it could not clean up is nobody's); `--older-than` spares the young leftovers of the rest, runs
claimed with `--run-id` that may still be running elsewhere.
On the local server, databases and roles its catalog does not list are collected when it starts.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import timedelta

from harness.config import ConfigError, Settings, parse_duration
from harness.mcp.server_process import LocalServer
from harness.run import liveness
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.backend import api_for, project_pool
from harness.servers.neon.leftovers import SweepReport, recorded_run_ids, sweep

__all__ = ["SweepReport", "main", "parse_age", "recorded_run_ids", "sweep"]


def parse_age(text: str) -> timedelta:
    """'90s', '30m', '1h', '2d' (or a bare number of seconds) as a timedelta."""
    try:
        return parse_duration("--older-than", text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


async def _main(args: argparse.Namespace) -> int:
    settings = Settings.from_env(warn=False)
    stopped: list[str] = []
    if not args.dry_run:
        # First, so that requests a killed run left in flight finish (or stop) before the sweep looks.
        stopped = [str(entry.pid) for entry in liveness.orphan_servers() if liveness.stop_orphan(entry)]
    server: LocalServer | None = None
    pool: list[str] = []
    if not settings.uses_local_server:
        api = api_for(settings)
        if settings.neon_project_pool:
            pool = project_pool(settings, api.base_url).all_ids
    else:
        server = LocalServer()
        endpoints = await server.start()
        api = NeonAPI(endpoints.api_url, None, operation_poll=0.05)
    recorded = recorded_run_ids(settings.results_dir)
    run_ids = recorded | set(args.run_id or [])
    killed = liveness.dead_runs()  # registered by a process that is gone: killed, never cleaned up
    live = liveness.live_run_ids()
    # Recorded here and run by no live process: ended, so its leftovers are nobody's (whatever their age).
    ended = recorded - live
    try:
        report = await sweep(
            api,
            older_than=args.older_than,
            run_ids=run_ids,
            pool=pool,
            golden=settings.neon_golden_branch,
            dry_run=args.dry_run,
            delete_projects=not pool,
            killed_runs=[entry.run_id for entry in killed] + sorted(ended),
            spare_runs=live,
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
    for spared in report.spared:
        print(f"left alone {spared}: not a run recorded in {settings.results_dir} (pass --run-id to claim it)")
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
    parser.add_argument(
        "--run-id", action="append", help="also treat this run id as the suite's (repeatable; default: results/)"
    )
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_main(args))
    except ConfigError as error:
        print(f"janitor: configuration error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
