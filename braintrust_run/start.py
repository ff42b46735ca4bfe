"""What a run checks and asks before its first trial, done when the run starts, not when an eval is imported.

Why: `braintrust eval --list`, `--dev` and `push` import every eval file. Importing used to ask
the judge (real judge calls), start PostgreSQL and the local server, probe the tool list, install
Neon's npm server and run every reference SQL: 17 s offline and 43-76 s with a judge for a list
of names. Now each eval file's `experiments()` only *plans* its checks (`plan_start`); the first row of any
experiment's data (`with_start`) or, for rounds whose data is built elsewhere, the first task
(`ensure_started`) runs every planned check once per process, in a worker thread, before the
first trial.

The experiment's tool count and view hash, and its scorers' versions, are filled into its metadata
then (the reporter reads the same dict), and for keyed runs which pushed Braintrust dataset its cases are
(`braintrust_run.dataset`). Under `braintrust eval` the SDK has registered the experiment by then
(braintrust 0.48.1 `framework.init_experiment` summarizes it at once), so each experiment's first
task sends the completed metadata again (`publish_started_metadata`).

A check that fails stops the run as before (exit 2, one line naming the setting or case): the
error is raised as `SystemExit` from the data of the first experiment, which no evaluator catches.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

from braintrust_run.dataset import recorded_version
from braintrust_run.experiments import add_scorer_versions, add_tool_view, experiment_id_of, publish_metadata
from braintrust_run.guard import check_start, stops_the_run
from braintrust_run.login import sending_logs
from braintrust_run.run_state import StartPlan, this_run
from braintrust_run.settings import current
from harness.cases import Case
from harness.config import Settings
from harness.preflight import check_reference_sql
from harness.recording.store import write_plan
from harness.servers.registry import family_for
from scorers.judge_client import preflight

T = TypeVar("T")


def count_planned(trials: int | None) -> None:
    """Count one experiment's trials into the plan the run's start writes (`harness.recording.store.write_plan`)."""
    this_run().start.planned_trials.append(trials)


def plan_start(settings: Settings, cases: list[Case], share: list[Case] | None = None) -> StartPlan:
    """Plan an eval's checks for the run's start (nothing runs now); `share`: the cases this process
    runs of them (a shard's), when not all."""
    plan = StartPlan(settings, list(cases), list(cases if share is None else share))
    this_run().start.plans.append(plan)
    return plan


def record_dataset_at_start(project: str, scenario: str, cases: list[Case], metadata: dict[str, Any]) -> None:
    """Have the run's start say in `metadata` which pushed Braintrust dataset its cases are (keyed runs)."""
    if sending_logs():
        this_run().start.pending_datasets.append((project, scenario, list(cases), metadata))


def _dataset_version(project: str, scenario: str, cases: list[Case]) -> dict[str, Any]:
    """Asked of Braintrust once per project, scenario and set of cases (every model's experiment shares it)."""
    key = (project, scenario, ",".join(f"{case.id}:{case.content_hash()}" for case in cases))
    versions = this_run().start.dataset_versions
    if key not in versions:
        versions[key] = recorded_version(project, scenario, cases)
    return versions[key]


def fill_at_start(settings: Settings, scenario: str, metadata: dict[str, Any]) -> None:
    """Have the run's start add the tool view under `settings` to this experiment's metadata."""
    start = this_run().start
    start.pending_metadata.append((settings, metadata))
    start.metadata[(settings, scenario)] = metadata


async def publish_started_metadata(settings: Settings, scenario: str, span: Any) -> None:
    """Once per experiment, from its first task: send its metadata again with what the start added."""
    key = (settings, scenario)
    start = this_run().start
    if key in start.published or key not in start.metadata or not sending_logs():
        return
    start.published.add(key)
    experiment_id = experiment_id_of(span)
    if experiment_id is not None:
        await asyncio.to_thread(publish_metadata, experiment_id, start.metadata[key])


@stops_the_run
def _check(plan: StartPlan) -> None:
    """The checks that used to run when the eval was imported, in the same order."""
    check_start(plan.settings, plan.cases)  # gate limits, a reused run id, a dead DATABASE_URL, a model shown no tool
    preflight()  # a judge route that refuses stops the run here, not as hundreds of n/a scores
    # The server family's own checks: a fixture without a pool project; Neon's npm server or DBHub installed.
    # A shard's pool holds projects of its share's fixtures only (`braintrust_run.shard.shard_pool`).
    fixtures = {case.fixture for case in plan.share}
    family_for(plan.settings).check_start(plan.settings, fixtures)
    # A reference SQL that fails on its fixture, naming the case: each one this shard's projects can load.
    check_reference_sql(plan.settings, [case for case in plan.cases if case.fixture in fixtures])


def start_now() -> None:
    """Run every planned check not yet run and fill every waiting metadata (blocking; once per plan)."""
    start = this_run().start
    with start.lock:
        if start.failed:
            raise start.failed[0]
        try:
            for plan in start.plans:
                if not plan.done:
                    _check(plan)
                    plan.done = True
            while start.pending_metadata:
                settings, metadata = start.pending_metadata.pop(0)
                add_tool_view(metadata, settings)
                add_scorer_versions(metadata)
            while start.pending_datasets:
                project, scenario, cases, metadata = start.pending_datasets.pop(0)
                metadata["braintrust_dataset"] = _dataset_version(project, scenario, cases)
            if start.plans and not start.plan_written:  # every eval file is loaded before any experiment starts
                start.plan_written = True
                planned = start.planned_trials
                known = None if None in planned else sum(t for t in planned if t is not None)
                shard = current().shard
                run_dir = start.plans[0].settings.results_dir / start.plans[0].settings.run_id
                write_plan(run_dir, known, shard=str(shard) if shard else None)
        except BaseException as error:
            start.failed.append(error)
            raise


async def ensure_started() -> None:
    """`start_now` from a running event loop, in a worker thread (the checks block); at once when done."""
    start = this_run().start
    if all(plan.done for plan in start.plans) and not start.pending_metadata and not start.failed:
        return
    await asyncio.to_thread(start_now)


def with_start(rows: Iterable[T]) -> Callable[[], AsyncIterator[T]]:
    """`Eval(data=...)` that runs the start before handing out its first row."""

    async def data() -> AsyncIterator[T]:
        await ensure_started()
        for row in rows:
            yield row

    return data
