"""What every eval file shares: dataset rows, the task, scorers and experiment metadata.

An eval file only says which scenario it measures; this module defines one Braintrust `Eval` per
model named in `EVAL_MODEL` (or both control agents when no model key is set), so experiments for
different models, servers and description variants line up side by side in the Braintrust UI.
"""

from __future__ import annotations

import itertools
import logging
import os

from braintrust import Eval

from evals._adaptive import ab_arms, define_rounds, parse_trials
from evals._experiments import base_experiment_id, repo_info, sending_logs
from evals._guard import check_start, stops_the_run
from evals._report import REPORTER, check_floor_names, parse_floors
from evals._scoring import observed
from evals._shard import Shard, parse_provider_budget, parse_shard, shard_pool
from evals._task import experiment_metadata, make_task, plan_rows
from evals._uploads import install_lean_score_inputs, watch_failed_uploads
from harness.cases import Case, Scenario, load_cases
from harness.mcp.toolview import DECOYS
from harness.preflight import check_reference_sql
from harness.run.shared import shared_settings
from harness.run.signals import sigterm_like_sigint
from harness.servers.neon.backend import check_cases
from scorers.adapters import SCORERS
from scorers.judge import preflight

# The CLI logs at INFO; one line per HTTP request to the server under test drowns the summaries.
for _noisy in ("httpx", "httpx2", "mcp"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)
sigterm_like_sigint()  # `timeout`, CI cancellation and container stops get Ctrl-C's cleanup

DEFAULT_PROJECT = "neon-mcp-evals"
DEFAULT_TRIALS = 20  # as in Neon's original suite
DEFAULT_CONCURRENCY = 4


def _positive_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, got {text!r}")
    return int(text)


def trial_plan(cases: list[Case], trials: int, shard: Shard | None) -> list[tuple[Case, int]]:
    """Every (case, trial index) this process runs: all of them, or this shard's share."""
    pairs = [(case, index) for case in cases for index in range(case.trial_count or trials)]
    return shard.select(pairs) if shard else pairs


def decoy_sweep(text: str) -> list[int]:
    """`EVAL_DECOY_SWEEP=0,4,8,12`: one experiment per decoy count (a degradation curve over catalog size)."""
    counts: list[int] = []
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        if not part.isdigit() or int(part) > len(DECOYS):
            raise ValueError(f"EVAL_DECOY_SWEEP: {part!r} is not a decoy count from 0 to {len(DECOYS)}")
        counts.append(int(part))
    return sorted(set(counts))


def check_judge_provider(value: str) -> None:
    """A misspelt judge route would silently fall back to another judge: refuse it instead."""
    known = ("braintrust", "anthropic", "openai", "none")
    if value.strip() and value.strip().lower() not in known:
        raise ValueError(f"EVAL_JUDGE_PROVIDER: {value!r} is not one of {', '.join(known)}")


@stops_the_run
def define_evals(eval_name: str, scenario: Scenario) -> None:
    """Declare one `Eval` per model (and per decoy count, when sweeping) for the cases of `scenario`."""
    base = shared_settings()
    floors = parse_floors(os.environ.get("EVAL_MIN_PASS", ""))  # a malformed floor stops the run before it starts
    check_floor_names(floors)
    check_judge_provider(os.environ.get("EVAL_JUDGE_PROVIDER", ""))
    shard = parse_shard(os.environ.get("EVAL_SHARD", ""))
    if shard and not os.environ.get("EVAL_RUN_ID"):
        raise ValueError("EVAL_SHARD needs EVAL_RUN_ID, the same for every shard, to gather them in one experiment")
    budget = parse_provider_budget(os.environ.get("EVAL_PROVIDER_CONCURRENCY", ""), shard)
    base = base.model_copy(update={"neon_project_pool": shard_pool(base.neon_project_pool, shard)})
    cases = load_cases(scenario=scenario)
    if not cases:
        return
    check_start(base, cases)  # gate limits, a reused run id, a dead DATABASE_URL, a model shown no tool
    preflight()  # a judge route that refuses stops the run here, not as hundreds of n/a scores
    check_cases(base, {case.fixture for case in cases})  # a fixture without a pool project stops the run
    check_reference_sql(base, cases)  # a reference SQL that fails on its fixture stops the run, naming the case
    trial_plan_settings = parse_trials(os.environ.get("EVAL_TRIALS", ""), DEFAULT_TRIALS)
    trials = trial_plan_settings.max_trials
    concurrency = _positive_int("EVAL_CONCURRENCY", DEFAULT_CONCURRENCY)
    project = os.environ.get("EVAL_PROJECT") or DEFAULT_PROJECT
    sweep = decoy_sweep(os.environ.get("EVAL_DECOY_SWEEP", ""))
    if trial_plan_settings.adaptive or ab_arms(base):
        define_rounds(eval_name, scenario, base, cases, trial_plan_settings, concurrency, project, sweep)
        return
    plan = trial_plan(cases, trials, shard)
    if not plan:  # more shards than this eval has trials: nothing for this one to run
        return
    if sending_logs():
        watch_failed_uploads(base.results_dir / base.run_id)
        install_lean_score_inputs()
    git = repo_info() if sending_logs() else None
    for model, decoys in itertools.product(base.models, sweep or [base.decoys]):
        settings = base.for_model(model).model_copy(update={"decoys": decoys})
        metadata = experiment_metadata(eval_name, settings, cases, trials, shard)
        variant = metadata["description_variant"]
        decoy_part = f" · {decoys} decoys" if sweep or decoys else ""
        # Shards of one run continue one experiment, named after the run; a lone run gets a new one.
        run_part = f" · {settings.run_id}" if shard else ""
        Eval(
            project,
            experiment_name=f"{eval_name} · {model} · {settings.server_label} · {variant}{decoy_part}{run_part}",
            data=plan_rows(plan),
            task=make_task(settings, budget=budget),
            scores=[observed(scorer) for scorer in SCORERS],
            trial_count=1,
            max_concurrency=concurrency,
            metadata=metadata,
            tags=[scenario, model.split(":", 1)[0]],
            reporter=REPORTER,
            update=shard is not None,
            base_experiment_id=base_experiment_id(project, metadata),
            repo_info=git,
        )
