"""The Braintrust reporter for every eval here: Braintrust's own summary, plus what it does not compute.

For each experiment it prints per-score pass rates with 95% Wilson intervals, pass^k, unscorable
counts and infrastructure errors (counted apart from accuracy), led by a DAMAGE line when main
changed without the user's approval in any trial, and ended by the failing trials counted per
cause (`analysis.attribution`: the model's tool choice or SQL, the server, the harness, the judge,
the case). The prompt-cache and judge-spend line is printed
only for a model (a control agent spends no tokens, so it would read like a warning and mean
nothing), or when the judge did spend. `report_run` prints the prompt cache over the whole run (the
share of input tokens read from it, and how many distinct tool lists the trials saw: trials that
share one read what an earlier trial wrote) when a model ran, then applies the run gate
(`braintrust_run.gate`: main changed without approval first, sandboxes left behind, failed tasks,
infrastructure and judge error shares, floors in `EVAL_MIN_PASS`, lost uploads, lost result
records) and returns False, so the CLI exits 1, printing every reason.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

from braintrust import Reporter

from analysis.attribution import HARNESS
from analysis.summary import OVERALL, TrialScores, render, summarise
from braintrust_run import gate, scoring
from braintrust_run.gate import (
    ExperimentReport,
    damage_failures,
    damage_summary,
    experiment_failures,
    other_failures,
    parse_floors,
    run_failures,
)
from braintrust_run.run_state import this_run
from braintrust_run.scoring import failure_cause, forget_scores, judge_error, lost_scores, main_damage
from braintrust_run.settings import current
from braintrust_run.uploads import lost_rows
from harness.models.control import is_control_agent
from harness.recording import trial_registry
from harness.recording.records import Usage, cache_hit_ratio
from scorers.judge_client import judge_totals

__all__ = ("REPORTER", "check_floor_names", "parse_floors")


def score_names() -> list[str]:
    """Every score a floor may name: the scorers' names and the overall verdict."""
    from scorers.registry import NAMES

    return [*NAMES, OVERALL]


def check_floor_names(floors: dict[str, float]) -> None:
    gate.check_floor_names(floors, score_names())


def _trial_fields(metadata: dict[str, Any]) -> dict[str, Any]:
    """The trial's lean metadata (or, for rows carrying a whole record, that record)."""
    return metadata if "outcome" in metadata else (metadata.get("trial") or {})


def trial_scores(result: Any) -> TrialScores:
    metadata = result.metadata or {}
    trial = _trial_fields(metadata)
    attribution = failure_cause(metadata.get("trial_key"))
    return TrialScores(
        case_id=str(metadata.get("case_id", result.input)),
        scores=dict(result.scores or {}),
        outcome=str(trial.get("outcome", "infra_error" if result.error else "ok")),
        cost_usd=trial.get("cost_usd"),
        # A task that raised left no record to read: the harness failed to produce one.
        cause=attribution.cause if attribution else (HARNESS if result.error else None),
    )


def per_case_scores(results: list[Any]) -> dict[str, dict[str, list[float | None]]]:
    """Every trial's scores grouped by case, for tools (and tests) that look below the averages."""
    cases: dict[str, dict[str, list[float | None]]] = {}
    for item in results:
        trial = trial_scores(item)
        for name, value in trial.scores.items():
            cases.setdefault(trial.case_id, {}).setdefault(name, []).append(value)
    return cases


def usage_totals(results: list[Any]) -> dict[str, Any]:
    """The experiment's prompt-cache hit ratio and the judge's own tokens and cost."""
    trials = [_trial_fields(item.metadata or {}) for item in results]
    usages = [Usage.model_validate(trial.get("usage") or {}) for trial in trials]
    queued = round(sum(float(trial.get("queue_s") or 0.0) for trial in trials), 2)
    return {"cache_hit_ratio": cache_hit_ratio(usages), "queue_s": queued, **judge_totals(trials)}


def run_cache(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """The prompt cache over the whole run: the share of input tokens read from it (trials that share
    a tool list, as a local pool's trials on one project do, read what an earlier trial wrote), the
    tokens behind that share, and how many distinct tool lists (`tool_view_hash`) the trials saw."""
    usages = [Usage.model_validate(trial.get("usage") or {}) for trial in trials]
    hashes = {str(trial["tool_view_hash"]) for trial in trials if trial.get("tool_view_hash")}
    return {
        "cache_read_share": cache_hit_ratio(usages),
        "input_tokens": sum(usage.prompt_tokens for usage in usages),
        "cache_read_input_tokens": sum(usage.cache_read_input_tokens for usage in usages),
        "cache_creation_input_tokens": sum(usage.cache_creation_input_tokens for usage in usages),
        "trials": len(trials),
        "tool_views": len(hashes),
    }


def render_run_cache(cache: dict[str, Any]) -> str:
    share = cache["cache_read_share"]
    read = "no input tokens" if share is None else f"{share:.1%} of {cache['input_tokens']:,} input tokens"
    return (
        f"run: prompt cache read {read} ({cache['cache_read_input_tokens']:,} read, "
        f"{cache['cache_creation_input_tokens']:,} written) over {cache['trials']} trial(s) "
        f"with {cache['tool_views']} distinct tool list(s)"
    )


# A cleanup error that says the results store failed is a lost record, which the gate names already.
LOST_RECORD_PREFIX = "results store:"


def cleanup_errors(results: list[Any]) -> list[str]:
    """`case: error` for every trial whose sandbox could not be cleaned up (its record's cleanup_error)."""
    found = []
    for item in results:
        error = _trial_fields(item.metadata or {}).get("cleanup_error")
        if error and not str(error).startswith(LOST_RECORD_PREFIX):
            found.append(f"{trial_scores(item).case_id}: {error}")
    return found


def usage_line(model: str, usage: dict[str, Any]) -> str | None:
    """The cache and judge line: for a model, or for what the judge spent; None for a control agent
    whose trials no judge was asked about (it would be every number zero)."""
    if not is_control_agent(model):
        return " · ".join(f"{name} {value}" for name, value in usage.items())
    if usage.get("judge_calls"):
        return " · ".join(f"{name} {value}" for name, value in usage.items() if name.startswith("judge_"))
    return None


def report_eval(evaluator: Any, result: Any, verbose: bool, jsonl: bool) -> ExperimentReport:
    summary = summarise([trial_scores(item) for item in result.results])
    usage = usage_totals(result.results)
    model = str((evaluator.metadata or {}).get("model") or "")
    this_run().trials.extend(_trial_fields(item.metadata or {}) for item in result.results)
    failures = [item for item in result.results if item.error]
    title = evaluator.experiment_name or evaluator.eval_name
    infra = [item for item in result.results if trial_scores(item).outcome == "infra_error"]
    first_infra = _trial_fields(infra[0].metadata or {}).get("error") if infra else None
    judged = [error for item in result.results if (error := judge_error((item.metadata or {}).get("trial_key")))]
    silent = [
        f"{trial_scores(item).case_id}: {why}"
        for item in result.results
        if (why := gate.no_answer(trial_scores(item).outcome, getattr(item, "output", None)))
    ]
    damaged = sorted(  # trials finish in any order; the first named is the first case by id
        f"{trial_scores(item).case_id}: {how}"
        for item in result.results
        if (how := main_damage((item.metadata or {}).get("trial_key")))
    )
    unclean = cleanup_errors(result.results)
    keys = [(item.metadata or {}).get("trial_key") for item in result.results]
    held = [key for key in keys if isinstance(key, str)]
    trial_registry.forget(held)  # scorers are done with them
    scoring.forget(held)
    forget_scores(held)
    report = ExperimentReport(
        title=title,
        summary=summary,
        model=model,
        main_damaged=len(damaged),
        first_main_damage=damaged[0] if damaged else None,
        cleanup_errors=len(unclean),
        first_cleanup_error=unclean[0] if unclean else None,
        failed_tasks=len(failures),
        infra_errors=len(infra),
        first_infra_error=first_infra,
        judge_errors=len(judged),
        first_judge_error=judged[0] if judged else None,
        no_answers=len(silent),
        first_no_answer=silent[0] if silent else None,
    )
    gate_reasons = experiment_failures(report, current().floors)
    if jsonl:
        line = {  # the SDK's own summary line (what eval-action reads), then the suite's fields beside it
            "experiment": title,
            **result.summary.as_dict(),
            "metadata": dict(evaluator.metadata or {}),
            "stats": asdict(summary),
            "cases": per_case_scores(result.results),
            "judge_errors": len(judged),
            "no_answers": len(silent),
            "main_damaged": len(damaged),
            "cleanup_errors": len(unclean),
            "usage": usage,
            "gate": {"passed": not gate_reasons, "reasons": gate_reasons},
        }
        print(json.dumps(line, default=str))
    else:
        print(str(result.summary))
        lead = damage_summary(report)
        tools = (evaluator.metadata or {}).get("tool_count", "?")
        print(render(f"{title} · {tools} tools", summary, lead=[lead] if lead else []))
        spent = usage_line(model, usage)
        if spent:
            print("   " + spent)
        print("   gate: " + ("pass" if not gate_reasons else "FAIL: " + "; ".join(gate_reasons)))
        for item in failures:
            print(f"   task error: {item.error!r}", file=sys.stderr)
    if infra:
        print(f"   {len(infra)} infrastructure error(s), first: {first_infra}", file=sys.stderr)
    if judged:
        print(f"   {len(judged)} judge error(s), first: {judged[0]}", file=sys.stderr)
    return report


def _lost_records() -> list[str]:
    from harness.recording import store

    lost = getattr(store, "lost_records", None)
    return list(lost()) if callable(lost) else []


def report_run(reports: list[ExperimentReport], verbose: bool, jsonl: bool) -> bool:
    floors = current().floors
    # Main changed without approval leads, across every experiment, before any other reason.
    reasons = [f"{report.title}: {reason}" for report in reports for reason in damage_failures(report)]
    reasons += [f"{report.title}: {reason}" for report in reports for reason in other_failures(report, floors)]
    rows, folder = lost_rows()
    reasons += run_failures(rows, str(folder) if folder else None, _lost_records(), lost_scores())
    trial_registry.forget()
    forget_scores()
    trials = this_run().trials  # every experiment's trials, for the run's cache line
    cache = run_cache(trials)
    trials.clear()
    if jsonl:
        print(json.dumps({"run": {"cache": cache}}))
    elif any(not is_control_agent(report.model) for report in reports):  # a model ran: the cache means something
        print(render_run_cache(cache))
    for reason in reasons:
        print(f"FAIL {reason}", file=sys.stderr)
    return not reasons


REPORTER = Reporter("migration-evals", report_eval=report_eval, report_run=report_run)
