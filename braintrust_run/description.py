"""An experiment described before Braintrust sees it, and the one function that makes it an `Eval`.

Fixed trials (`evals._wiring`), adaptive rounds and A/B arms (`braintrust_run.adaptive`) and the judge's
calibration (`braintrust_run.calibration`) each describe their experiments as `Experiment`s, and every eval
file declares them alike, so the `Eval(...)` a reader sees in `evals/eval_*.py` is the one that runs:

    for experiment in experiments("prepare_migration", scenario="prepare"):
        Eval(experiment.project, **eval_arguments(experiment))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.config import Settings


@dataclass(frozen=True)
class Experiment:
    """What differs between the `Eval`s of a run: one per model and decoy count, arm or judge."""

    project: str  # EVAL_PROJECT
    name: str  # `experiment_name` below, or the calibration's own
    data: Any  # the rows: a list, or an async generator the run's start runs before (braintrust_run/start.py)
    task: Any  # one trial end to end in its own sandbox (braintrust_run/task.py), or one judgement
    scores: list[Any]  # every score in scorers/registry.py, or the calibration's
    metadata: dict[str, Any]  # what the experiment measured, its comparison key and base
    tags: list[str]  # the scenario and the provider (and "ab" for an arm)
    concurrency: int  # EVAL_CONCURRENCY (EVAL_CALIBRATION_CONCURRENCY for the judge)
    reporter: Any  # the suite's reporter and gate, or the calibration's
    sending: bool  # the process is logged in to Braintrust (braintrust_run/login.py); else local mode
    update: bool = False  # shards of one run continue one experiment
    comparison: Mapping[str, Any] = field(default_factory=dict)  # base_experiment_id, summarize_scores, git info
    parameters: Mapping[str, Any] | None = None  # what the playground may choose: model, descriptions, decoys
    trial_count: int = 1  # 1: a row is one trial; under `--dev` a playground row is a case, run EVAL_TRIALS times


def eval_arguments(experiment: Experiment) -> dict[str, Any]:
    """The keyword arguments of `Eval(experiment.project, ...)`: the one place a description becomes
    an `Eval`, whatever kind of run made it."""
    return {
        "experiment_name": experiment.name,
        "data": experiment.data,
        "task": experiment.task,
        "scores": experiment.scores,
        "metadata": experiment.metadata,  # model, server, tool view, dataset hash, comparison key, base
        "trial_count": experiment.trial_count,
        "parameters": experiment.parameters,
        "max_concurrency": experiment.concurrency,
        "tags": experiment.tags,
        "reporter": experiment.reporter,  # pass rates with 95% intervals, pass^k, then the run gate
        "update": experiment.update,
        "no_send_logs": not experiment.sending,  # run by Python without a Braintrust key: local mode
        **experiment.comparison,  # the newest like-for-like experiment as the base, or no comparison
    }


def experiment_name(
    eval_name: str, title: str, settings: Settings, variant: str, sweep: bool, run_id: str | None
) -> str:
    """`<eval> · <model or arm> · <server> · <description variant>[ · N decoys][ · <run id>]`: the
    decoy count when sweeping or when any are added, the run id for shards (they continue one
    experiment named after the run); the same name for the same settings, so runs line up."""
    name = f"{eval_name} · {title} · {settings.server_label} · {variant}"
    if sweep or settings.decoys:
        name += f" · {settings.decoys} decoys"
    return name + (f" · {run_id}" if run_id else "")
