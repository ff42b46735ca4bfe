"""The small helpers every eval file builds its `Eval(...)` call from: one per model and decoy count.

Each `evals/eval_*.py` shows its own `Eval(...)` call, in the shape of Braintrust's examples;
`experiments(eval_name, scenario)` gives what differs between its experiments: one per model named
in `EVAL_MODEL` (or both control agents when no model key is set) and per decoy count
(`EVAL_DECOY_SWEEP`), so experiments for different models, servers and description variants line up
side by side in the Braintrust UI. Adaptive rounds and A/B arms (`EVAL_TRIALS=adaptive`,
`EVAL_AB_A`/`EVAL_AB_B`) share one schedule between experiments: `evals/_adaptive.py` declares
those itself, and `experiments` then gives none.

`REPORTER` is the suite's reporter, keeping each experiment's report, so that `finish()` can apply
the run gate to them when the file is run by Python (`python evals/eval_x.py`, `python -m
evals.eval_x`), with the exit codes `braintrust eval` gives (0 pass, 1 the gate failed, 2 a bad
setting or case before anything started).
"""

from __future__ import annotations

import itertools
import logging
import sys
from dataclasses import dataclass
from typing import Any, cast

from braintrust.framework import ReporterDef

from evals import _gate, _report
from evals._adaptive import ab_arms, define_rounds, parse_trials
from evals._experiments import comparison_arguments
from evals._guard import stops_the_run
from evals._login import cli_flags, sending_logs, start_login
from evals._playground import parameters
from evals._report import check_floor_names
from evals._scoring import observed
from evals._settings import DEFAULT_TRIALS, check_judge_provider, current
from evals._shard import Shard, shard_pool
from evals._start import count_planned, plan_start, record_dataset_at_start, with_start
from evals._task import experiment_metadata, make_task, plan_rows
from evals._uploads import install_lean_score_inputs, watch_failed_uploads
from harness.cases import Case, Scenario, load_cases
from harness.config import Settings
from harness.run.shared import shared_settings
from harness.run.signals import sigterm_like_sigint
from harness.servers.registry import family_for
from harness.servers.roles import CaseNotServed
from scorers.adapters import SCORERS

# The CLI logs at INFO; one line per HTTP request to the server under test drowns the summaries.
for _noisy in ("httpx", "httpx2", "mcp"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)
sigterm_like_sigint()  # `timeout`, CI cancellation and container stops get Ctrl-C's cleanup


def trial_plan(cases: list[Case], trials: int, shard: Shard | None) -> list[tuple[Case, int]]:
    """Every (case, trial index) this process runs: all of them, or this shard's share."""
    pairs = [(case, index) for case in cases for index in range(case.trial_count or trials)]
    return shard.select(pairs) if shard else pairs


def served_cases(cases: list[Case], settings: list[Settings]) -> list[Case]:
    """The cases every server of the run can run in its family's terms (an A/B of servers runs the same
    cases on both); each one left out is named, with why, on stderr."""
    kept: list[Case] = []
    for case in cases:
        reasons = []
        for family in dict.fromkeys(family_for(chosen) for chosen in settings):
            try:
                family.case_for(case)
            except CaseNotServed as error:
                reasons.append(f"{family.name}: {error}")
        if reasons:
            print(f"evals: case '{case.id}' left out: {'; '.join(reasons)}", file=sys.stderr, flush=True)
        else:
            kept.append(case)
    return kept


@dataclass(frozen=True)
class Experiment:
    """What differs between the `Eval`s of one eval file (one per model and decoy count)."""

    project: str  # EVAL_PROJECT
    name: str  # <eval> · <model> · <server> · <description variant>[ · N decoys][ · <run id> for shards]
    data: Any  # one row per (case, trial index); the run's checks run before the first (evals/_start.py)
    task: Any  # one trial end to end in its own sandbox (evals/_task.py)
    scores: list[Any]  # every score in scorers/registry.py
    metadata: dict[str, Any]  # what the experiment measured, its comparison key and base
    tags: list[str]  # the scenario and the provider
    concurrency: int  # EVAL_CONCURRENCY
    update: bool  # shards of one run continue one experiment
    sending: bool  # the process is logged in to Braintrust (evals/_login.py)
    comparison: dict[str, Any]  # base_experiment_id, summarize_scores, repo_info, git_metadata_settings
    parameters: dict[str, Any]  # what the playground may choose: model, description variant, decoys
    trial_count: int  # 1: a row is one trial; under `--dev` a playground row is a case, run EVAL_TRIALS times


@stops_the_run
def experiments(eval_name: str, scenario: Scenario) -> list[Experiment]:
    """The experiments of `scenario`'s cases, one per model (and per decoy count, when sweeping).

    Only what needs no server, model or database is checked here; the rest is planned for the
    run's start (`evals._start`), so `--list` and `push` import the evals in a moment."""
    start_login()  # `.env`, `--api-key` and the SDK's login, before any setting is read
    base = shared_settings()
    run = current()  # the run's own settings, read once (evals/_settings.py)
    check_floor_names(run.floors)  # a malformed or unknown floor stops the run before it starts
    check_judge_provider(run.judge_provider)
    shard = run.shard
    if shard and not run.run_id:
        raise ValueError("EVAL_SHARD needs EVAL_RUN_ID, the same for every shard, to gather them in one experiment")
    budget = run.provider_budget
    base = base.model_copy(
        update={"neon_project_pool": shard_pool(base.neon_project_pool, shard, trials=run.fixed_trials)}
    )
    cases = served_cases(load_cases(scenario=scenario), [base, *(arm for _, _, arm in ab_arms(base, run.env))])
    if not cases:
        return []
    _gate.check_limits()  # a bad gate share stops the run before anything starts
    plan_start(base, cases)  # the judge, the database, the tools and the reference SQL: when the run starts
    trial_plan_settings = parse_trials(run.trials, DEFAULT_TRIALS, run.env)
    trials = trial_plan_settings.max_trials
    concurrency = run.concurrency
    project = run.project
    sweep = run.decoy_sweep
    sending = sending_logs()
    if sending:  # lean uploads and the lost-upload count, for rounds too
        watch_failed_uploads(base.results_dir / base.run_id)
        install_lean_score_inputs()
    arms = ab_arms(base, run.env)
    if trial_plan_settings.adaptive or arms:
        count_planned(None)  # rounds decide as they go
        define_rounds(eval_name, scenario, base, cases, trial_plan_settings, concurrency, project, sweep, arms)
        return []
    plan = trial_plan(cases, trials, shard)
    if not plan:  # more shards than this eval has trials: nothing for this one to run
        return []
    flags = cli_flags()
    filtered = flags is not None and bool(flags.filters)  # the CLI drops rows that cannot be counted here
    made: list[Experiment] = []
    for model, decoys in itertools.product(base.models, sweep or [base.decoys]):
        settings = base.for_model(model).model_copy(update={"decoys": decoys})
        metadata = experiment_metadata(eval_name, settings, cases, trials, shard)
        record_dataset_at_start(project, scenario, cases, metadata)
        decoy_part = f" · {decoys} decoys" if sweep or decoys else ""
        # Shards of one run continue one experiment, named after the run; a lone run gets a new one.
        run_part = f" · {settings.run_id}" if shard else ""
        name = f"{eval_name} · {model} · {settings.server_label} · {metadata['description_variant']}"
        name += decoy_part + run_part
        count_planned(None if filtered else len(plan))
        made.append(
            Experiment(
                project=project,
                name=name,
                data=cast(Any, with_start(plan_rows(plan))),  # an async generator: the SDK takes it
                task=make_task(settings, scenario, budget=budget),
                scores=[observed(scorer) for scorer in SCORERS],  # judge errors and damage are counted
                metadata=metadata,
                tags=[scenario, model.split(":", 1)[0]],
                concurrency=concurrency,
                update=shard is not None,
                sending=sending,
                comparison=comparison_arguments(project, name, metadata),  # like for like, or none; git info
                parameters=parameters(settings),
                trial_count=trials if flags is not None and flags.dev else 1,
            )
        )
    return made


_REPORTS: list[Any] = []  # every experiment's report in this process, for `finish`


def _report_and_keep(evaluator: Any, result: Any, verbose: bool, jsonl: bool) -> Any:
    report = _report.REPORTER.report_eval(evaluator, result, verbose, jsonl)
    _REPORTS.append(report)
    return report


# The suite's reporter (same name, same output), keeping what `finish` needs. A `ReporterDef`, not
# `Reporter(...)`, which refuses a second reporter of one name while the CLI loads a file.
REPORTER = ReporterDef(name=_report.REPORTER.name, report_eval=_report_and_keep, report_run=_report.REPORTER.report_run)


def finish() -> int:
    """The end of `python evals/eval_x.py`: the run gate over this process's experiments, as `braintrust
    eval` applies it (its reasons printed, exit 1 when it fails, 0 when it passes)."""
    passed = _report.REPORTER.report_run(list(_REPORTS), True, False)
    _REPORTS.clear()
    return 0 if passed else 1
