"""What a run checks and asks before its first trial, done when the run starts, not when an eval is imported.

Why: `braintrust eval --list`, `--dev` and `push` import every eval file. Importing used to ask
the judge (real judge calls), start PostgreSQL and the local server, probe the tool list, install
Neon's npm server and run every reference SQL: 17 s offline and 43-76 s with a judge for a list
of names. Now each eval file's `experiments()` only *plans* its checks (`plan_start`); the first row of any
experiment's data (`with_start`) or, for rounds whose data is built elsewhere, the first task
(`ensure_started`) runs every planned check once per process, in a worker thread, before the
first trial.

The experiment's tool count and view hash are filled into its metadata then (the reporter reads
the same dict), and for keyed runs which pushed Braintrust dataset its cases are
(`evals.dataset`). Under `braintrust eval` the SDK has registered the experiment by then
(braintrust 0.48.1 `framework.init_experiment` summarizes it at once), so each experiment's first
task sends the completed metadata again (`publish_started_metadata`).

A check that fails stops the run as before (exit 2, one line naming the setting or case): the
error is raised as `SystemExit` from the data of the first experiment, which no evaluator catches.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from evals._experiments import add_tool_view, experiment_id_of, publish_metadata
from evals._guard import check_start, stops_the_run
from evals._login import sending_logs
from evals._settings import current
from evals.dataset import recorded_version
from harness.cases import Case
from harness.config import Settings
from harness.preflight import check_reference_sql
from harness.recording.store import write_plan
from harness.servers.registry import family_for
from scorers.judge import preflight

T = TypeVar("T")


@dataclass
class StartPlan:
    """The checks one eval needs before its first trial, and whether they ran."""

    settings: Settings
    cases: list[Case]
    done: bool = False


_PLANS: list[StartPlan] = []
_PENDING_METADATA: list[tuple[Settings, dict[str, Any]]] = []
_PENDING_DATASETS: list[tuple[str, str, list[Case], dict[str, Any]]] = []  # (project, scenario, cases, metadata)
_DATASET_VERSIONS: dict[tuple[str, str, str], dict[str, Any]] = {}
# Every experiment's metadata by (settings, scenario), which a task knows, and which were sent again.
_METADATA: dict[tuple[Settings, str], dict[str, Any]] = {}
_PUBLISHED: set[tuple[Settings, str]] = set()
_LOCK = threading.Lock()
_FAILED: list[BaseException] = []
_PLANNED_TRIALS: list[int | None] = []  # each experiment's trial count (None: not known in advance)
_PLAN_WRITTEN: list[bool] = []


def count_planned(trials: int | None) -> None:
    """Count one experiment's trials into the plan the run's start writes (`harness.recording.store.write_plan`)."""
    _PLANNED_TRIALS.append(trials)


def plan_start(settings: Settings, cases: list[Case]) -> StartPlan:
    """Plan an eval's checks for the run's start (nothing runs now)."""
    plan = StartPlan(settings, list(cases))
    _PLANS.append(plan)
    return plan


def record_dataset_at_start(project: str, scenario: str, cases: list[Case], metadata: dict[str, Any]) -> None:
    """Have the run's start say in `metadata` which pushed Braintrust dataset its cases are (keyed runs)."""
    if sending_logs():
        _PENDING_DATASETS.append((project, scenario, list(cases), metadata))


def _dataset_version(project: str, scenario: str, cases: list[Case]) -> dict[str, Any]:
    """Asked of Braintrust once per project, scenario and set of cases (every model's experiment shares it)."""
    key = (project, scenario, ",".join(f"{case.id}:{case.content_hash()}" for case in cases))
    if key not in _DATASET_VERSIONS:
        _DATASET_VERSIONS[key] = recorded_version(project, scenario, cases)
    return _DATASET_VERSIONS[key]


def fill_at_start(settings: Settings, scenario: str, metadata: dict[str, Any]) -> None:
    """Have the run's start add the tool view under `settings` to this experiment's metadata."""
    _PENDING_METADATA.append((settings, metadata))
    _METADATA[(settings, scenario)] = metadata


async def publish_started_metadata(settings: Settings, scenario: str, span: Any) -> None:
    """Once per experiment, from its first task: send its metadata again with what the start added."""
    key = (settings, scenario)
    if key in _PUBLISHED or key not in _METADATA or not sending_logs():
        return
    _PUBLISHED.add(key)
    experiment_id = experiment_id_of(span)
    if experiment_id is not None:
        await asyncio.to_thread(publish_metadata, experiment_id, _METADATA[key])


@stops_the_run
def _check(plan: StartPlan) -> None:
    """The checks that used to run when the eval was imported, in the same order."""
    check_start(plan.settings, plan.cases)  # gate limits, a reused run id, a dead DATABASE_URL, a model shown no tool
    preflight()  # a judge route that refuses stops the run here, not as hundreds of n/a scores
    # The server family's own checks: a fixture without a pool project; Neon's npm server or DBHub installed.
    family_for(plan.settings).check_start(plan.settings, {case.fixture for case in plan.cases})
    check_reference_sql(plan.settings, plan.cases)  # a reference SQL that fails on its fixture, naming the case


def start_now() -> None:
    """Run every planned check not yet run and fill every waiting metadata (blocking; once per plan)."""
    with _LOCK:
        if _FAILED:
            raise _FAILED[0]
        try:
            for plan in _PLANS:
                if not plan.done:
                    _check(plan)
                    plan.done = True
            while _PENDING_METADATA:
                settings, metadata = _PENDING_METADATA.pop(0)
                add_tool_view(metadata, settings)
            while _PENDING_DATASETS:
                project, scenario, cases, metadata = _PENDING_DATASETS.pop(0)
                metadata["braintrust_dataset"] = _dataset_version(project, scenario, cases)
            if _PLANS and not _PLAN_WRITTEN:  # every eval file is loaded before any experiment starts
                _PLAN_WRITTEN.append(True)
                known = None if None in _PLANNED_TRIALS else sum(t for t in _PLANNED_TRIALS if t is not None)
                shard = current().shard
                run_dir = _PLANS[0].settings.results_dir / _PLANS[0].settings.run_id
                write_plan(run_dir, known, shard=str(shard) if shard else None)
        except BaseException as error:
            _FAILED.append(error)
            raise


async def ensure_started() -> None:
    """`start_now` from a running event loop, in a worker thread (the checks block); at once when done."""
    if all(plan.done for plan in _PLANS) and not _PENDING_METADATA and not _FAILED:
        return
    await asyncio.to_thread(start_now)


def with_start(rows: Iterable[T]) -> Callable[[], AsyncIterator[T]]:
    """`Eval(data=...)` that runs the start before handing out its first row."""

    async def data() -> AsyncIterator[T]:
        await ensure_started()
        for row in rows:
            yield row

    return data
