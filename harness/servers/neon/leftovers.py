"""What ended runs left on a Neon server, found by the marks the suite puts on every name, and deleted.

Why a module of its own: the janitor (`make janitor`) and a run's start on the local twin both use
it. A run deletes every sandbox it makes in every outcome it survives; one killed outright (SIGKILL,
the OOM killer), or whose PostgreSQL was killed under it and could not come back, leaves its
projects behind. Those are marked (`eval-<run id>-...`) and their run is known to be over when its
owner entry names a dead process (`harness.run.liveness`) or when it is recorded in `results/` and
no live process runs it. At its start, a run on the local twin deletes what such runs left
(`collect_ended_runs`), so the run after a crash cleans up after it without anyone running the
janitor; the janitor does the same on demand, and for aged leftovers of runs it cannot tell are over.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness.clock import Clock, system_clock
from harness.run import liveness
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.conventions import EVAL_PREFIX, EXPECTED_PREFIX


@dataclass
class SweepReport:
    """What was (or, in a dry run, would be) deleted, and what was left alone for being unmarked."""

    projects: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)  # "project_id/branch_id (name)"
    spared: list[str] = field(default_factory=list)  # eval-looking names of runs the suite never recorded
    errors: list[str] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)  # pids of orphaned local servers stopped


def recorded_run_ids(results_dir: Path) -> set[str]:
    """Run ids the suite recorded: the folders of `results_dir` that hold a run.json."""
    if not results_dir.is_dir():
        return set()
    return {path.parent.name for path in results_dir.glob("*/run.json")}


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


def _owner(name: str, prefix: str, run_ids: Iterable[str]) -> str | None:
    """The run whose mark `name` carries (`<prefix><run id>-...`): the longest such run id, so that
    a name of run `x-2` is never taken for run `x`'s."""
    marks = [run_id for run_id in run_ids if run_id and name.startswith(f"{prefix}{run_id}-")]
    return max(marks, key=len) if marks else None


def _deletable(item: dict[str, object], name: str, prefix: str, plan: _Plan) -> bool | None:
    """True: delete; False: leave (young, or a live run's); None: no run of ours marks it."""
    owner = _owner(name, prefix, plan.known)
    if owner is None:
        return None
    if owner in plan.killed:
        return True
    return owner in plan.runs and _old(item, plan.cutoff)


@dataclass(frozen=True)
class _Plan:
    runs: frozenset[str]  # whose marked leftovers go once older than the cutoff
    killed: frozenset[str]  # whose go whatever their age
    known: frozenset[str]  # every run id a name may carry (the above and the spared)
    cutoff: datetime


async def sweep(
    api: NeonAPI,
    *,
    older_than: timedelta,
    run_ids: Iterable[str],
    pool: Iterable[str] = (),
    golden: str = "golden",
    dry_run: bool = False,
    delete_projects: bool = True,
    killed_runs: Iterable[str] = (),
    spare_runs: Iterable[str] = (),
    clock: Clock = system_clock,
) -> SweepReport:
    """Delete marked leftovers older than `older_than`, and those of `killed_runs` whatever their age;
    return what was deleted (or would be). A name belongs to the run with the longest id it is marked
    with, `spare_runs` (live runs) included: so what a live run `x-2` holds is never deleted as the
    killed run `x`'s, and a spared run's is deleted only by age, when it is in `run_ids` as well."""
    report = SweepReport()
    spared = set(spare_runs)
    killed = frozenset(set(killed_runs) - spared)
    runs = frozenset(set(run_ids) | killed)
    plan = _Plan(runs, killed, frozenset(runs | spared), clock() - older_than)
    pool_ids = set(pool)
    if delete_projects:
        for project in await api.list_projects(search=EVAL_PREFIX):
            name = str(project.get("name", ""))
            if project["id"] in pool_ids or not name.startswith(EVAL_PREFIX):
                continue
            verdict = _deletable(project, name, EVAL_PREFIX, plan)
            if verdict is None:
                report.spared.append(f"project {project['id']} ({name})")
            if not verdict:
                continue
            report.projects.append(project["id"])
            if not dry_run:
                try:
                    await api.delete_project(project["id"])
                except Exception as error:
                    report.errors.append(f"project {project['id']}: {error}")
    for project_id in sorted(pool_ids):
        for branch in await api.list_branches(project_id):
            name = str(branch.get("name") or "")
            if branch.get("default") or name == golden or not _deletable(branch, name, EXPECTED_PREFIX, plan):
                continue
            report.branches.append(f"{project_id}/{branch['id']} ({name})")
            if not dry_run:
                try:
                    await api.delete_branch(project_id, branch["id"])
                except Exception as error:
                    report.errors.append(f"branch {project_id}/{branch['id']}: {error}")
    return report


async def collect_ended_runs(api: NeonAPI, results_dir: Path, run_id: str) -> SweepReport:
    """At a run's start on the local twin: stop the local servers killed runs left, then delete the
    marked projects of every run that is over (killed, or recorded in `results_dir` and run by no
    live process), whatever their age; never the running run's (`run_id`) nor any live run's.

    Never raises: what it could not delete is named on stderr with the command that deletes it."""
    report = SweepReport()
    try:
        report.servers = [str(entry.pid) for entry in liveness.orphan_servers() if liveness.stop_orphan(entry)]
        live = liveness.live_run_ids() | {run_id}
        killed = [entry for entry in liveness.dead_runs() if entry.run_id not in live]
        over = {entry.run_id for entry in killed} | (recorded_run_ids(results_dir) - live)
        if not over:
            return report
        found = await sweep(api, older_than=timedelta(0), run_ids=over, killed_runs=over, spare_runs=live)
        report.projects, report.errors = found.projects, found.errors
    except Exception as error:  # housekeeping: the run goes on, and says what is left to do
        report.errors.append(f"{type(error).__name__}: {error}")
    if report.projects:
        print(
            f"harness: deleted {len(report.projects)} project(s) that ended runs left on the local server",
            file=sys.stderr,
            flush=True,
        )
    if report.errors:
        print(
            f"harness: could not delete all that ended runs left on the local server ({report.errors[0]}); "
            "`make janitor` (python -m harness.servers.neon.janitor) deletes it",
            file=sys.stderr,
            flush=True,
        )
    else:
        for entry in killed:
            liveness.forget(entry)
    return report
