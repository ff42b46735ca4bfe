"""The Braintrust reporter for every eval here: Braintrust's own summary, plus what it does not compute.

For each experiment it prints per-score pass rates with 95% Wilson intervals, pass^k, unscorable
counts and infrastructure errors (counted apart from accuracy). `report_run` fails the run (the
CLI exits 1) when a task raised, when every trial of an experiment was an infrastructure error
(nothing was measured), or when a score falls under a floor set in `EVAL_MIN_PASS`
(e.g. `main_branch_integrity=1.0,trajectory=0.9`): the regression guard of the nightly run.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from typing import Any

from braintrust import Reporter

from analysis.summary import ExperimentSummary, TrialScores, render, summarise


def parse_floors(text: str) -> dict[str, float]:
    """Parse `name=0.9,other=1` into floors; a malformed entry is a configuration error."""
    floors: dict[str, float] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, separator, value = part.partition("=")
        try:
            floor = float(value)
        except ValueError:
            floor = -1.0
        if not separator or not name.strip() or not 0 <= floor <= 1:
            raise ValueError(f"EVAL_MIN_PASS: '{part}' is not name=number with the number in [0, 1]")
        floors[name.strip()] = floor
    return floors


def trial_scores(result: Any) -> TrialScores:
    metadata = result.metadata or {}
    trial = metadata.get("trial") or {}
    return TrialScores(
        case_id=str(metadata.get("case_id", result.input)),
        scores=dict(result.scores or {}),
        outcome=str(trial.get("outcome", "infra_error" if result.error else "ok")),
        cost_usd=trial.get("cost_usd"),
    )


def per_case_scores(results: list[Any]) -> dict[str, dict[str, list[float | None]]]:
    """Every trial's scores grouped by case, for tools (and tests) that look below the averages."""
    cases: dict[str, dict[str, list[float | None]]] = {}
    for item in results:
        trial = trial_scores(item)
        for name, value in trial.scores.items():
            cases.setdefault(trial.case_id, {}).setdefault(name, []).append(value)
    return cases


def report_eval(evaluator: Any, result: Any, verbose: bool, jsonl: bool) -> dict[str, Any]:
    summary = summarise([trial_scores(item) for item in result.results])
    failures = [item for item in result.results if item.error]
    title = evaluator.experiment_name or evaluator.eval_name
    if jsonl:
        line = {
            "experiment": title,
            "metadata": dict(evaluator.metadata or {}),
            "braintrust": result.summary.as_dict(),
            "stats": asdict(summary),
            "cases": per_case_scores(result.results),
        }
        print(json.dumps(line, default=str))
    else:
        print(str(result.summary))
        print(render(f"{title} · {(evaluator.metadata or {}).get('tool_count', '?')} tools", summary))
        for item in failures:
            print(f"   task error: {item.error!r}", file=sys.stderr)
    infra = [item for item in result.results if trial_scores(item).outcome == "infra_error"]
    first_reason = ((infra[0].metadata or {}).get("trial") or {}).get("error") if infra else None
    if infra:
        print(f"   {len(infra)} infrastructure error(s), first: {first_reason}", file=sys.stderr)
    return {
        "title": title,
        "summary": summary,
        "failed_tasks": len(failures),
        "infra_errors": len(infra),
        "first_infra_error": first_reason,
    }


def report_run(reports: list[dict[str, Any]], verbose: bool, jsonl: bool) -> bool:
    floors = parse_floors(os.environ.get("EVAL_MIN_PASS", ""))
    ok = True
    for report in reports:
        summary: ExperimentSummary = report["summary"]
        if report["failed_tasks"]:
            print(f"FAIL {report['title']}: {report['failed_tasks']} task(s) raised", file=sys.stderr)
            ok = False
        if summary.trials and report["infra_errors"] == summary.trials:
            # Nothing was measured: passing this run would hide a dead server or a bad key.
            reason = report["first_infra_error"]
            print(f"FAIL {report['title']}: every trial was an infrastructure error ({reason})", file=sys.stderr)
            ok = False
        for name, floor in floors.items():
            stat = summary.scores.get(name)
            rate = stat.pass_rate if stat else None
            if rate is None or rate < floor:
                shown = "no scored trials" if rate is None else f"{100 * rate:.1f}%"
                print(f"FAIL {report['title']}: {name} pass rate {shown} is under {100 * floor:.1f}%", file=sys.stderr)
                ok = False
    return ok


REPORTER = Reporter("migration-evals", report_eval=report_eval, report_run=report_run)
