"""What every eval file shares: dataset rows, the task, scorers and experiment metadata.

An eval file only says which scenario it measures; this module defines one Braintrust `Eval` per
model named in `EVAL_MODEL` (or both control agents when no model key is set), so experiments for
different models, servers and description variants line up side by side in the Braintrust UI.
"""

from __future__ import annotations

import itertools
import logging
import os
from functools import cache
from typing import Any

from braintrust import Eval, EvalCase

from evals._adaptive import ab_arms, define_rounds, parse_trials
from evals._report import REPORTER, parse_floors
from harness.cases import Case, Scenario, load_cases
from harness.config import Settings
from harness.probe import count_model_tools_blocking
from harness.records import TrialRecord
from harness.shared import run_trial, shared_settings
from harness.store import git_commit
from harness.toolview import DECOYS
from scorers.adapters import SCORERS
from scorers.metrics import trial_metrics

# The CLI logs at INFO; one line per HTTP request to the server under test drowns the summaries.
for _noisy in ("httpx", "httpx2", "mcp"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

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


@cache
def tool_count(settings: Settings) -> int | str:
    """Tools the model sees (asked of the server once per configuration and process)."""
    return count_model_tools_blocking(settings)


def experiment_metadata(eval_name: str, settings: Settings, cases: list[Case], trials: int) -> dict[str, Any]:
    return {
        "eval": eval_name,
        "model": settings.model,
        "server": settings.scrub(settings.server),
        "tool_count": tool_count(settings.model_copy(update={"model": "control:oracle"})),
        "description_variant": settings.description_variant,
        "decoys": settings.decoys,
        "tool_shuffle_seed": settings.tool_shuffle_seed,
        "tool_filter": settings.tool_filter,
        "trials_per_case": trials,
        "cases": len(cases),
        "dataset": os.environ.get("EVAL_DATASET") or "bundled",
        "git_commit": git_commit(),
        "run_id": settings.run_id,
    }


def rows(cases: list[Case]) -> list[EvalCase[str, str]]:
    """One Braintrust row per case; the case itself travels in metadata for the task and scorers."""
    return [
        EvalCase(
            input=case.input,
            expected=case.expected_answer,
            metadata={
                "case_id": case.id,
                "scenario": case.scenario,
                "fixture": case.fixture,
                "case": case.model_dump(mode="json"),
            },
            tags=case.tags,
            trial_count=case.trial_count,
        )
        for case in cases
    ]


def make_task(settings: Settings, on_record: Any = None) -> Any:
    """The Braintrust task: one trial of one case (the runner also keeps it in the results store).

    Adaptive rows carry their own trial index; `on_record(case, trial_index, record or None)` hears of
    every finished trial (evals/_adaptive.py)."""

    async def task(input: str, hooks: Any) -> str:
        case = Case.model_validate(hooks.metadata["case"])
        trial_index = hooks.metadata.get("trial_index", hooks.trial_index)
        try:
            record: TrialRecord = await run_trial(case, trial_index, settings)
        except BaseException:
            if on_record is not None:
                on_record(case, trial_index, None)
            raise
        if on_record is not None:
            on_record(case, trial_index, record)
        hooks.metadata["trial"] = record.model_dump(mode="json")
        hooks.metadata["outcome"] = record.outcome
        hooks.metadata["tool_sequence"] = [call.name for call in record.tool_calls]
        hooks.span.log(metrics=trial_metrics(record))
        return record.final_answer

    return task


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


def define_evals(eval_name: str, scenario: Scenario) -> None:
    """Declare one `Eval` per model (and per decoy count, when sweeping) for the cases of `scenario`."""
    base = shared_settings()
    parse_floors(os.environ.get("EVAL_MIN_PASS", ""))  # a malformed floor stops the run before it starts
    check_judge_provider(os.environ.get("EVAL_JUDGE_PROVIDER", ""))
    cases = load_cases(scenario=scenario)
    if not cases:
        return
    plan = parse_trials(os.environ.get("EVAL_TRIALS", ""), DEFAULT_TRIALS)
    trials = plan.max_trials
    concurrency = _positive_int("EVAL_CONCURRENCY", DEFAULT_CONCURRENCY)
    project = os.environ.get("EVAL_PROJECT") or DEFAULT_PROJECT
    sweep = decoy_sweep(os.environ.get("EVAL_DECOY_SWEEP", ""))
    if plan.adaptive or ab_arms(base):
        define_rounds(eval_name, scenario, base, cases, plan, concurrency, project, sweep)
        return
    for model, decoys in itertools.product(base.models, sweep or [base.decoys]):
        settings = base.for_model(model).model_copy(update={"decoys": decoys})
        metadata = experiment_metadata(eval_name, settings, cases, trials)
        variant = metadata["description_variant"]
        decoy_part = f" · {decoys} decoys" if sweep or decoys else ""
        Eval(
            project,
            experiment_name=f"{eval_name} · {model} · {settings.server_kind} · {variant}{decoy_part}",
            data=rows(cases),
            task=make_task(settings),
            scores=SCORERS,
            trial_count=trials,
            max_concurrency=concurrency,
            metadata=metadata,
            tags=[scenario, model.split(":", 1)[0]],
            reporter=REPORTER,
        )
