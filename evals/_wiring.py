"""The experiments of one eval file: one per model and decoy count, or the arms and rounds of one schedule.

Each `evals/eval_*.py` declares `Eval(experiment.project, **eval_arguments(experiment))` for every
experiment `experiments(eval_name, scenario)` describes (`braintrust_run.description`): one per model named
in `EVAL_MODEL` (or both control agents when no model key is set) and per decoy count
(`EVAL_DECOY_SWEEP`), so experiments for different models, servers and description variants line up
side by side in the Braintrust UI. Adaptive rounds and A/B arms (`EVAL_TRIALS=adaptive`,
`EVAL_AB_A`/`EVAL_AB_B`) share one schedule between experiments: `braintrust_run/adaptive.py` describes
those, and the eval file declares them the same way.

`REPORTER` is the suite's reporter, keeping each experiment's report, so that `finish()` can apply
the run gate to them when the file is run by Python (`python evals/eval_x.py`, `python -m
evals.eval_x`), with the exit codes `braintrust eval` gives (0 pass, 1 the gate failed, 2 a bad
setting or case before anything started).
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any, cast

from braintrust.framework import ReporterDef

from braintrust_run import gate, report
from braintrust_run.adaptive import TrialPlan, ab_arms, define_rounds, parse_trials
from braintrust_run.description import Experiment, experiment_name
from braintrust_run.doors import resolve_here
from braintrust_run.experiments import comparison_arguments
from braintrust_run.guard import stops_the_run
from braintrust_run.login import cli_flags, sending_logs, start_login
from braintrust_run.playground import parameters
from braintrust_run.report import check_floor_names
from braintrust_run.run_state import this_run
from braintrust_run.scoring import observed
from braintrust_run.settings import DEFAULT_TRIALS, EvalSettings, check_judge_provider, current
from braintrust_run.shard import Shard, cases_of, plan_pairs, shard_pool
from braintrust_run.start import count_planned, plan_start, record_dataset_at_start, with_start
from braintrust_run.task import make_task, plan_rows, planned_metadata
from braintrust_run.uploads import install_lean_score_inputs, watch_failed_uploads
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
    """Every (case, trial index) this process runs of fixed trials: all of them, or this shard's share."""
    return plan_pairs(cases, trials, shard)


def chosen_cases(cases: list[Case], case_ids: frozenset[str], known: Sequence[Case] | None = None) -> list[Case]:
    """The cases EVAL_CASE_IDS names (all when it names none); an id no case of the dataset (`known`,
    default: every loaded case) has stops the run, naming it."""
    if not case_ids:
        return cases
    ids = {case.id for case in (load_cases() if known is None else known)}
    unknown = sorted(case_ids - ids)
    if unknown:
        raise ValueError(f"EVAL_CASE_IDS names no case of the dataset: {', '.join(unknown)}")
    return [case for case in cases if case.id in case_ids]


def _unserved(case: Case, settings: list[Settings]) -> list[str]:
    """Why a server family of the run cannot run `case` (empty: every one can)."""
    reasons = []
    for family in dict.fromkeys(family_for(chosen) for chosen in settings):
        try:
            family.case_for(case)
        except CaseNotServed as error:
            reasons.append(f"{family.name}: {error}")
    return reasons


def served_cases(cases: list[Case], settings: list[Settings]) -> list[Case]:
    """The cases every server of the run can run in its family's terms (an A/B of servers runs the same
    cases on both); each one left out is named, with why, on stderr."""
    kept: list[Case] = []
    for case in cases:
        reasons = _unserved(case, settings)
        if reasons:
            print(f"evals: case '{case.id}' left out: {'; '.join(reasons)}", file=sys.stderr, flush=True)
        else:
            kept.append(case)
    return kept


def own_pool(
    base: Settings,
    env: Mapping[str, str],
    shard: Shard | None,
    trials: TrialPlan,
    dataset: Sequence[Case] | None = None,
) -> tuple[str, ...]:
    """This shard's projects of NEON_PROJECT_POOL, split by the very pairs each shard runs: every case
    of the dataset (default: the run's, EVAL_DATASET) that the run serves, of every eval file (each
    eval file's process splits the pool the same way, as does every machine), with the trial plan and
    A/B arms (`env`, the run's settings) the evals run them with."""
    if shard is None or not base.neon_project_pool:
        return base.neon_project_pool
    arms = ab_arms(base, env)
    servers = [base, *(arm for _, _, arm in arms)]
    every = load_cases() if dataset is None else list(dataset)
    chosen = chosen_cases(every, EvalSettings.from_env(env).case_ids, every)
    cases = [case for case in chosen if not _unserved(case, servers)]
    rounds = trials.adaptive or bool(arms)
    return shard_pool(base.neon_project_pool, shard, cases, trials.max_trials, rounds)


@stops_the_run
def experiments(eval_name: str, scenario: Scenario) -> list[Experiment]:
    """The experiments of `scenario`'s cases, one per model (and per decoy count, when sweeping).

    Only what needs no server, model or database is checked here; the rest is planned for the
    run's start (`braintrust_run.start`), so `--list` and `push` import the evals in a moment."""
    start_login()  # `.env`, `--api-key` and the SDK's login, before any setting is read
    # The run's choices, as the launcher makes them (braintrust_run/doors.py); none for a list of names.
    if not (flags := cli_flags()) or not flags.list:
        resolve_here(sending=sending_logs())
    base = shared_settings()
    run = current()  # the run's own settings, read once (braintrust_run/settings.py)
    check_floor_names(run.floors)  # a malformed or unknown floor stops the run before it starts
    check_judge_provider(run.judge_provider)
    shard = run.shard
    if shard and not run.run_id:
        raise ValueError("EVAL_SHARD needs EVAL_RUN_ID, the same for every shard, to gather them in one experiment")
    budget = run.provider_budget
    trial_plan_settings = parse_trials(run.trials, DEFAULT_TRIALS, run.env)
    trials = trial_plan_settings.max_trials
    base = base.model_copy(update={"neon_project_pool": own_pool(base, run.env, shard, trial_plan_settings)})
    arms = ab_arms(base, run.env)  # after the split: the arms run on this shard's projects too
    scenario_cases = chosen_cases(load_cases(scenario=scenario), run.case_ids)
    cases = served_cases(scenario_cases, [base, *(arm for _, _, arm in arms)])
    if not cases:
        return []
    gate.check_limits()  # a bad gate share stops the run before anything starts
    rounds = trial_plan_settings.adaptive or bool(arms)
    plan = plan_pairs(cases, trials, shard, rounds)  # what this process runs (in rounds: at most)
    if not plan:  # more shards than this eval has trials (or cases, in rounds): nothing for this one to run
        return []
    # The judge, the database, the tools and the reference SQL, when the run starts; the pool is asked
    # only for the fixtures of this shard's share, the ones its projects were split by.
    plan_start(base, cases, share=cases_of(plan))
    concurrency = run.concurrency
    project = run.project
    sweep = run.decoy_sweep
    sending = sending_logs()
    if sending:  # lean uploads and the lost-upload count, for rounds too
        watch_failed_uploads(base.results_dir / base.run_id)
        install_lean_score_inputs()
    if rounds:
        count_planned(None)  # rounds decide as they go
        return define_rounds(
            eval_name, scenario, base, cases, trial_plan_settings, concurrency, project, sweep, arms, REPORTER, shard
        )
    filtered = flags is not None and bool(flags.filters)  # the CLI drops rows that cannot be counted here
    made: list[Experiment] = []
    for model, decoys in itertools.product(base.models, sweep or [base.decoys]):
        settings = base.for_model(model).model_copy(update={"decoys": decoys})
        metadata = planned_metadata(eval_name, settings, cases, trials, shard)
        record_dataset_at_start(project, scenario, cases, metadata)
        # Shards of one run continue one experiment, named after the run; a lone run gets a new one.
        run_id = settings.run_id if shard else None
        name = experiment_name(eval_name, model, settings, metadata["description_variant"], bool(sweep), run_id)
        count_planned(None if filtered else len(plan))
        made.append(
            Experiment(
                project=project,
                name=name,
                data=cast(Any, with_start(plan_rows(plan))),  # an async generator: the SDK takes it
                task=make_task(settings, scenario, cases, budget=budget),
                scores=[observed(scorer) for scorer in SCORERS],  # judge errors and damage are counted
                metadata=metadata,
                tags=[scenario, model.split(":", 1)[0]],
                concurrency=concurrency,
                reporter=REPORTER,
                update=shard is not None,
                sending=sending,
                comparison=comparison_arguments(project, name, metadata),  # like for like, or none; git info
                parameters=parameters(settings),
                trial_count=trials if flags is not None and flags.dev else 1,
            )
        )
    return made


def _report_and_keep(evaluator: Any, result: Any, verbose: bool, jsonl: bool) -> Any:
    made = report.REPORTER.report_eval(evaluator, result, verbose, jsonl)
    this_run().reports.append(made)  # every experiment's report in this process, for `finish`
    return made


# The suite's reporter (same name, same output), keeping what `finish` needs. A `ReporterDef`, not
# `Reporter(...)`, which refuses a second reporter of one name while the CLI loads a file.
REPORTER = ReporterDef(name=report.REPORTER.name, report_eval=_report_and_keep, report_run=report.REPORTER.report_run)


def finish() -> int:
    """The end of `python evals/eval_x.py`: the run gate over this process's experiments, as `braintrust
    eval` applies it (its reasons printed, exit 1 when it fails, 0 when it passes)."""
    reports = this_run().reports
    passed = report.REPORTER.report_run(list(reports), True, False)
    reports.clear()
    return 0 if passed else 1
