"""One self-contained HTML page per run: the numbers, the per-case picture and why each failure failed.

A terminal table says *that* a score dropped; reviewing a run means seeing which cases, which trials
and what the scorers said about them. Records are re-scored offline with the deterministic scorers
(as `analysis.compare` does; factuality needs a judge and is left out), summarised per model and
scenario, and rendered as one HTML file with inline CSS, inline SVG pictures and no scripts, so it can
be mailed or attached to a CI run. A run whose scores were made by older scorer versions than
today's (its `scores.jsonl` and `run.json` name them) says so on the page's first lines, and on
stderr, naming each score's version then and today. The page is a Jinja2 template (`analysis/templates/report.html`)
with autoescaping: everything taken from a record is escaped, since transcripts can contain anything.

    python -m analysis.report RUN [--out FILE] [--dataset PATH] [--pictures DIR]

Building the page is pure (`analysis.rescore.score_run`, `render_report`); reading the run and
writing the file are kept in `main`. What each score's metadata means comes from `scorers.registry`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autoevals import Score

from analysis.attribution import DEFECTS
from analysis.pages import render_page
from analysis.report_pictures import Picture, draw_pictures
from analysis.rescore import DETERMINISTIC_NAMES, ScoredTrial, score_run, summarise_scored, today_versions
from analysis.runs import RunInputError, load_records, run_folder
from analysis.stored_scores import VersionNote, note_for_run
from analysis.summary import OVERALL, PASS_THRESHOLD, percent
from harness.cases import DatasetError, load_cases
from harness.models.control import damages_main_by_design
from harness.recording.records import TrialRecord
from scorers.main_damage import changed_main_unapproved, damage_line
from scorers.registry import spec

NAMES = [*DETERMINISTIC_NAMES, OVERALL]
DIFF_LINES = 40  # the scorer already caps its diff; a page with dozens of failures needs a tighter cap
ANSWER_CHARS = 600
# What makes two failing trials the same failure, shown once: the case, how it ended, the tools it
# called in order, every failed scorer's explanation (the diff, the checks, the writes) and its cause.
SIGNATURE = ("case_id", "outcome", "tools", "error", "explanations", "cause", "cause_reason")


def _groups(trials: Sequence[ScoredTrial]) -> dict[tuple[str, str], list[ScoredTrial]]:
    groups: dict[tuple[str, str], list[ScoredTrial]] = defaultdict(list)
    for trial in trials:
        groups[(trial.record.config.model, trial.case.scenario)].append(trial)
    return dict(sorted(groups.items()))


def header_values(run_info: Mapping[str, Any], run_path: Path, trials: int) -> dict[str, Any]:
    """Run id, creation time, commit and the settings (already stored without secrets)."""
    settings = run_info.get("settings") or {}
    return {
        "run_id": str(run_info.get("run_id") or run_path.name),
        "created": str(run_info.get("created_at", "unknown")),
        "trials": trials,
        "run_path": str(run_path),
        "commit": run_info.get("git_commit") or settings.get("git_commit"),
        "scorers": ", ".join(DETERMINISTIC_NAMES),
        "threshold": PASS_THRESHOLD,
        "settings": [
            (str(key), value if isinstance(value, str) else json.dumps(value))
            for key, value in sorted(settings.items())
            if value not in (None, "", [], {})
        ],
    }


def summary_values(trials: Sequence[ScoredTrial]) -> dict[str, Any]:
    """Outcomes, cost, tokens and duration, then one row per score like the terminal table."""
    summary = summarise_scored(trials)
    records = [t.record for t in trials]
    rows = []
    for stat in summary.scores.values():
        interval = "" if stat.interval is None else f"[{percent(stat.interval.low)}, {percent(stat.interval.high)}]"
        pass_hat = " ".join(percent(value) for value in stat.pass_hat.values())
        cells = [(stat.name, "name"), (percent(stat.mean), "mean"), (percent(stat.pass_rate), "pass")]
        cells += [(interval, "ci"), (pass_hat, "pass-k"), (str(stat.scored), "scored"), (str(stat.unscorable), "na")]
        rows.append({"name": stat.name, "cells": cells})
    return {
        "trials": summary.trials,
        "cases": summary.cases,
        "outcomes": ", ".join(f"{name} {count}" for name, count in sorted(summary.outcomes.items())),
        "cost": "n/a" if summary.mean_cost_usd is None else f"${summary.mean_cost_usd:.4f}",
        "tokens_in": f"{statistics.mean(r.usage.input_tokens for r in records):.0f}",
        "tokens_out": f"{statistics.mean(r.usage.output_tokens for r in records):.0f}",
        "duration": f"{statistics.median(r.duration_s for r in records):.2f}",
        "summary": rows,
        "causes": summary.causes,
    }


def grid_values(trials: Sequence[ScoredTrial]) -> list[dict[str, Any]]:
    """Rows are cases, columns scores, cells passes/scored: where a score fails matters as much as how often."""
    by_case: dict[str, list[ScoredTrial]] = defaultdict(list)
    for trial in trials:
        by_case[trial.record.case_id].append(trial)
    rows = []
    for case_id, case_trials in sorted(by_case.items()):
        cells = []
        for name in NAMES:
            verdicts = [t.verdicts[name] for t in case_trials if t.verdicts[name] is not None]
            passed = sum(bool(v) for v in verdicts)
            if not verdicts:
                cells.append({"text": "n/a", "css": "na", "score": name})
            else:
                css = "pass" if passed == len(verdicts) else "fail" if passed == 0 else "mixed"
                cells.append({"text": f"{passed}/{len(verdicts)}", "css": css, "score": name})
        kinds = {cell["css"] for cell in cells}
        # Passed everything it was judged on (and was judged on something): folded on the page, so the
        # cases with a failure, or never judged, are the ones a reader sees first.
        rows.append({"case_id": case_id, "cells": cells, "clean": kinds <= {"pass", "na"} and "pass" in kinds})
    return rows


def explanation_values(name: str, score: Score) -> dict[str, Any]:
    """What a failing scorer said: its reason, then the lines its registry entry explains the metadata
    with (failed checks, unexpected writes, branches left); a multi-line block (a diff) is capped."""
    meta = score.metadata or {}
    items, blocks = [], []
    for line in spec(name).explain(meta):
        if "\n" not in line:
            items.append(line)
            continue
        lines = line.splitlines()
        shown = lines[:DIFF_LINES] + ([f"... {len(lines) - DIFF_LINES} more lines"] if len(lines) > DIFF_LINES else [])
        blocks.append("\n".join(shown))
    return {"name": name, "reason": meta.get("reason"), "lines": items, "blocks": blocks}


def failure_values(trial: ScoredTrial) -> dict[str, Any]:
    """One failing trial: which, what it called in order, and every scorer's explanation."""
    record = trial.record
    calls = [
        call.name + (" (error)" if call.is_error else "") + (" (decoy)" if call.decoy else "")
        for call in record.tool_calls
    ]
    answer = record.final_answer[:ANSWER_CHARS] + ("…" if len(record.final_answer) > ANSWER_CHARS else "")
    attribution = trial.attribution
    return {
        "cause": attribution.cause if attribution else None,
        "cause_reason": attribution.reason if attribution else None,
        "case_id": record.case_id,
        "index": record.trial_index,
        "outcome": record.outcome,
        "tools": " → ".join(calls),
        "error": None if record.outcome == "ok" else f"{record.outcome}: {record.error or 'no reason recorded'}",
        "explanations": [
            explanation_values(n, trial.scores[n]) for n in DETERMINISTIC_NAMES if trial.verdicts[n] is False
        ],
        "answer": answer,
    }


def trial_ranges(indices: Sequence[int]) -> str:
    """`0–3, 7, 9–10`: twenty trial numbers in a few characters."""
    runs: list[list[int]] = []
    for index in sorted(set(indices)):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def failure_groups(trials: Sequence[ScoredTrial]) -> list[dict[str, Any]]:
    """The failing trials of one model and scenario, grouped by case and `SIGNATURE`: twenty trials
    failing the same way are one entry with its list of trials, so a large run stays a page a person
    can scroll. Final answers are kept per distinct answer, since they rarely repeat word for word."""
    per_case = Counter(trial.record.case_id for trial in trials)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for trial in sorted((t for t in trials if t.failed), key=lambda t: (t.record.case_id, t.record.trial_index)):
        values = failure_values(trial)
        grouped.setdefault(json.dumps([values[key] for key in SIGNATURE]), []).append(values)
    groups = []
    for members in grouped.values():
        answers: dict[str, list[int]] = defaultdict(list)
        for member in members:
            if member["answer"]:
                answers[member["answer"]].append(member["index"])
        first, indices = members[0], [member["index"] for member in members]
        groups.append(
            {
                **{key: first[key] for key in SIGNATURE},
                "trials": indices,
                "trial_text": trial_ranges(indices),
                "case_trials": per_case[first["case_id"]],
                "failed": [explanation["name"] for explanation in first["explanations"]],
                "answers": [{"trials": trial_ranges(i), "text": text} for text, i in answers.items()],
            }
        )
    return groups


def group_values(model: str, scenario: str, trials: Sequence[ScoredTrial]) -> dict[str, Any]:
    """One model × scenario: summary, per-case grid, failures grouped by case and signature."""
    failures = failure_groups(trials)
    return {
        "model": model,
        "scenario": scenario,
        **summary_values(trials),
        "grid": grid_values(trials),
        "failures": failures,
        "failed_trials": sum(len(group["trials"]) for group in failures),
    }


def damage_values(trials: Sequence[ScoredTrial]) -> list[dict[str, Any]]:
    """One line per model whose trials changed main without the user's approval: the page's first
    words, since no pass rate matters beside it (the same count and sentence as the console's)."""
    by_model: dict[str, list[ScoredTrial]] = defaultdict(list)
    for trial in trials:
        by_model[trial.record.config.model].append(trial)
    lines = []
    for model, model_trials in sorted(by_model.items()):
        damaged = [t for t in model_trials if any(changed_main_unapproved(n, s) for n, s in t.scores.items())]
        if not damaged:
            continue
        first = min((t.record for t in damaged), key=lambda r: (r.case_id, r.trial_index))  # not the finishing order
        lines.append(
            {
                "model": model,
                "text": f"{model}: {damage_line(len(damaged), len(model_trials))} "
                f"(first: {first.case_id} trial {first.trial_index})",
                "by_design": damages_main_by_design(model),
            }
        )
    return lines


# A group's failure lines shown open; the rest fold into one line, so that a run of every bundled case
# (100+, an unsafe agent failing each) stays a page one can read through: the first ones are the model's.
FAILURES_SHOWN = 12


def version_values(note: VersionNote | None) -> dict[str, Any] | None:
    """What the page says about the versions that scored the run, when they are not today's."""
    if note is None or not note.differs:
        return None
    rows = [{"name": name, "then": ", ".join(then), "today": now} for name, (then, now) in note.older.items()]
    return {"unknown": note.unknown, "rows": rows}


def render_report(
    run_info: Mapping[str, Any],
    run_path: Path,
    trials: Sequence[ScoredTrial],
    pictures: Mapping[str, Picture] | None = None,
    versions: VersionNote | None = None,
) -> str:
    """The whole page, from data only (the template escapes every value; only the SVG pictures are not).
    `versions`: how the versions that scored the run differ from today's (None: not compared)."""
    groups = [group_values(model, scenario, group) for (model, scenario), group in _groups(trials).items()]
    header = header_values(run_info, run_path, len(trials))
    causes = summarise_scored(trials).causes if trials else {}
    return render_page(
        "report.html",
        title=f"Eval report: {header['run_id']}",
        damage=damage_values(trials),
        versions=version_values(versions),
        causes=causes,
        defects=sum(count for cause, count in causes.items() if cause in DEFECTS),
        **header,
        pictures=pictures if pictures is not None else draw_pictures(trials),
        groups=groups,
        names=NAMES,
        failures_shown=FAILURES_SHOWN,
    )


def load(argument: str) -> tuple[Path, dict[str, Any], list[TrialRecord]]:
    """The run's folder, run.json and records (see `analysis.runs.load_records`)."""
    path, info, records = load_records(argument)
    return run_folder(path), info, records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.report", description="Write one self-contained HTML report of a run."
    )
    parser.add_argument("run", metavar="RUN", help="run folder, its trials.jsonl, or a run id under results/")
    parser.add_argument("--out", type=Path, help="where to write the page (default: <run folder>/report.html)")
    parser.add_argument("--dataset", help="case file or folder (default: EVAL_DATASET, then the bundled cases)")
    parser.add_argument("--pictures", type=Path, metavar="DIR", help="also write each picture as DIR/<name>.svg")
    args = parser.parse_args(argv)
    try:
        run_dir, info, records = load(args.run)
        cases = {case.id: case for case in load_cases(args.dataset)}
        trials = score_run(records, cases)
        pictures = draw_pictures(trials)
        versions = note_for_run(run_dir, info, today_versions())
        page = render_report(info, run_dir, trials, pictures, versions)
        out: Path = args.out or run_dir / "report.html"
        out.write_text(page, encoding="utf-8")
        if args.pictures:
            args.pictures.mkdir(parents=True, exist_ok=True)
            for name, picture in pictures.items():  # only the pictures the page draws
                if picture.svg:
                    path = args.pictures / f"{name.replace('_', '-')}.svg"
                    path.write_text(picture.svg + "\n", encoding="utf-8")
    except (RunInputError, DatasetError, OSError) as error:
        print(f"report: error: {error}", file=sys.stderr)
        return 2
    if not versions.unknown:  # a run that names no versions is said so on the page alone
        for line in versions.lines(f"run {run_dir.name}"):
            print(f"report: {line}", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
