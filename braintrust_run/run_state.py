"""One process's run: what the eval files, their data and tasks, the scorers' wrappers and the
reporter leave for each other between the first eval file's import and the gate's verdict.

Why an object and not arguments all the way: Braintrust calls the data, the task, the scorers and
the reporter with arguments of its own (a row, hooks, a result), so what one of them leaves for
another (the start's checks, a trial's scores, an experiment's report) cannot be handed along by
the suite. It is kept here, in one `Run` per process, whose parts say who writes and who reads
them; no other module in `evals/` keeps mutable state (`tests/evals/test_run_state.py` fails on a
new store). A test or a long-lived process starts afresh with `new_run()`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autoevals import Score

    from analysis.attribution import Attribution
    from analysis.stored_scores import ScoresFile
    from harness.cases import Case
    from harness.config import Settings
    from harness.recording.records import TrialRecord
    from harness.recording.store import ResultsStore


@dataclass
class StartPlan:
    """The checks one eval needs before its first trial, and whether they ran (`braintrust_run.start`)."""

    settings: Settings
    cases: list[Case]  # the eval's, every shard's: the dataset checks, the same on every machine
    share: list[Case]  # the cases this process runs (a shard's share): the fixtures its pool projects hold
    done: bool = False


@dataclass
class StartState:
    """Written while the eval files are imported (`plan_start`, `fill_at_start`, ...), read once by
    the run's start, before the first trial (`braintrust_run.start.start_now`)."""

    plans: list[StartPlan] = field(default_factory=list)
    pending_metadata: list[tuple[Settings, dict[str, Any]]] = field(default_factory=list)
    pending_datasets: list[tuple[str, str, list[Case], dict[str, Any]]] = field(default_factory=list)
    dataset_versions: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    # Every experiment's metadata by (settings, scenario), which a task knows, and which were sent again.
    metadata: dict[tuple[Settings, str], dict[str, Any]] = field(default_factory=dict)
    published: set[tuple[Settings, str]] = field(default_factory=set)
    planned_trials: list[int | None] = field(default_factory=list)  # per experiment; None: not known in advance
    plan_written: bool = False
    failed: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class KeptScores:
    """Where a trial's scores go, and how many of its scorers have yet to report."""

    record: TrialRecord
    scores: ScoresFile
    store: ResultsStore
    left: int


@dataclass
class ScoringState:
    """Written by the scorers' wrappers as each score arrives (`braintrust_run.scoring`), read by the reporter
    and the gate; per trial key (the row metadata's `trial_key`)."""

    judge_errors: dict[str, str] = field(default_factory=dict)  # "score name: message"
    main_damage: dict[str, dict[str, str]] = field(default_factory=dict)  # score name -> reason
    scores: dict[str, dict[str, Score]] = field(default_factory=dict)  # until every scorer answered
    causes: dict[str, Attribution | None] = field(default_factory=dict)  # why it failed (None: it did not)
    kept: dict[str, KeptScores] = field(default_factory=dict)  # where its scores are kept on disk
    lost_scores: list[str] = field(default_factory=list)  # why each score that could not be kept was lost
    noted_runs: set[Path] = field(default_factory=set)  # run folders whose run.json names the scorer versions
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class SlotState:
    """The model slots trials hold (`braintrust_run.slots`): a semaphore per event loop and budget, and what
    each local endpoint said its slot count was (asked once)."""

    semaphores: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Semaphore] = field(default_factory=dict)
    server_slots: dict[str, int | None] = field(default_factory=dict)


@dataclass
class Run:
    """Everything one process's run shares between Braintrust's callbacks (see the module's docstring)."""

    started_at: float = field(default_factory=time.time)  # uploads dropped since then are this run's
    start: StartState = field(default_factory=StartState)
    scoring: ScoringState = field(default_factory=ScoringState)
    slots: SlotState = field(default_factory=SlotState)
    failed_uploads: Path | None = None  # where the SDK keeps the batches it dropped (`braintrust_run.uploads`)
    reports: list[Any] = field(default_factory=list)  # every experiment's report, for `finish` (`evals._wiring`)
    trials: list[dict[str, Any]] = field(default_factory=list)  # every experiment's trials, for the cache line
    adaptive_summaries: dict[Path, dict[str, Any]] = field(default_factory=dict)  # adaptive.json, by path
    # What outside services answered, asked once per run: the tool view a configuration shows the model
    # (`braintrust_run.experiments.probed_view`) and a Braintrust project's experiments (`project_experiments`).
    tool_views: dict[Settings, tuple[int, str, tuple[str, ...]] | str] = field(default_factory=dict)
    experiment_listings: dict[str, tuple[dict[str, Any], ...] | str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Holder:
    """The process's one run (the only mutable state `evals/` keeps at module level)."""

    run: Run | None = None
    lock = threading.Lock()


def this_run() -> Run:
    """The process's run, made at the first call."""
    with _Holder.lock:
        if _Holder.run is None:
            _Holder.run = Run()
        return _Holder.run


def new_run() -> Run:
    """Start the process's run afresh (a test, or a process that runs the evals twice) and return it."""
    with _Holder.lock:
        _Holder.run = Run()
        return _Holder.run
