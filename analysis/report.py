"""One self-contained HTML page per run: the numbers, the per-case picture and why each failure failed.

A terminal table says *that* a score dropped; reviewing a run means seeing which cases, which trials
and what the scorers said about them. Records are re-scored offline with the deterministic scorers
(as `analysis.compare` does; factuality needs a judge and is left out), summarised per model and
scenario, and rendered as one HTML file with inline CSS and no scripts, so it can be mailed or
attached to a CI run. Everything taken from a record is escaped: transcripts can contain anything.

    python -m analysis.report RUN [--out FILE] [--dataset PATH]

Building the page is pure (`analysis.rescore.score_run`, `render_report`); reading the run and
writing the file are kept in `main`. What each score's metadata means comes from `scorers.registry`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from string import Template
from typing import Any

from autoevals import Score

from analysis.rescore import DETERMINISTIC_NAMES, ScoredTrial, score_run
from analysis.runs import RunInputError, load_records, run_folder
from analysis.summary import OVERALL, PASS_THRESHOLD, ExperimentSummary, TrialScores, summarise
from harness.cases import DatasetError, load_cases
from harness.records import TrialRecord
from scorers.registry import spec

NAMES = [*DETERMINISTIC_NAMES, OVERALL]
DIFF_LINES = 40  # the scorer already caps its diff; a page with dozens of failures needs a tighter cap
ANSWER_CHARS = 600

PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>$title</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #ccc;padding:.2em .55em;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}
td.pass{background:#c8ecc8}td.mixed{background:#f8e0a0}td.fail{background:#f4c0c0}td.na{background:#e4e4e4;color:#777}
section.group{border-top:3px solid #888;margin-top:2em}
pre{background:#f6f6f6;padding:.5em;overflow-x:auto;font-size:12px}li.failure{margin-bottom:.8em}
code{background:#f3f3f3;padding:0 .2em}dl{columns:2}dt{font-weight:600}dd{margin:0 0 .3em 1em}
</style></head><body>
$body
</body></html>
""")


def _groups(trials: Sequence[ScoredTrial]) -> dict[tuple[str, str], list[ScoredTrial]]:
    groups: dict[tuple[str, str], list[ScoredTrial]] = defaultdict(list)
    for trial in trials:
        groups[(trial.record.config.model, trial.case.scenario)].append(trial)
    return dict(sorted(groups.items()))


def _summary(trials: Sequence[ScoredTrial]) -> ExperimentSummary:
    """The suite's usual summary; a score is n/a exactly where `verdicts_of` says it could not be judged."""
    return summarise(
        [
            TrialScores(
                case_id=t.record.case_id,
                scores={n: None if t.verdicts[n] is None else t.scores[n].score for n in DETERMINISTIC_NAMES},
                outcome=t.record.outcome,
                cost_usd=t.record.cost_usd,
            )
            for t in trials
        ]
    )


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _cell(text: str, cls: str = "", **data: str) -> str:
    """A table cell with escaped text; `data` becomes data-* attributes, so tests (and people) can find cells."""
    attributes = (f' class="{cls}"' if cls else "") + "".join(f' data-{k}="{escape(v)}"' for k, v in data.items())
    return f"<td{attributes}>{escape(text)}</td>"


def render_header(run_info: Mapping[str, Any], run_path: Path, trials: int) -> str:
    """Run id, creation time, commit and the settings (already stored without secrets)."""
    settings = run_info.get("settings") or {}
    commit = run_info.get("git_commit") or settings.get("git_commit")
    items = "".join(
        f"<dt>{escape(str(key))}</dt><dd>{escape(value if isinstance(value, str) else json.dumps(value))}</dd>"
        for key, value in sorted(settings.items())
        if value not in (None, "", [], {})
    )
    return (
        f"<h1>Run {escape(str(run_info.get('run_id') or run_path.name))}</h1>\n"
        f"<p>created {escape(str(run_info.get('created_at', 'unknown')))}; {trials} trials from "
        f"<code>{escape(str(run_path))}</code>"
        f"{f'; git commit <code>{escape(str(commit))}</code>' if commit else ''}. "
        f"Re-scored offline with {escape(', '.join(DETERMINISTIC_NAMES))} (factuality needs a judge and is left out). "
        f"A trial passes a score at ≥ {PASS_THRESHOLD}; the 95% CI is Wilson's; "
        "n/a trials are left out of the rates.</p>\n"
        f"<details><summary>settings</summary><dl>{items}</dl></details>"
    )


def render_summary(trials: Sequence[ScoredTrial]) -> str:
    """Outcomes, cost, tokens and duration, then one row per score like the terminal table."""
    summary = _summary(trials)
    records = [t.record for t in trials]
    outcomes = ", ".join(f"{name} {count}" for name, count in sorted(summary.outcomes.items()))
    cost = "n/a" if summary.mean_cost_usd is None else f"${summary.mean_cost_usd:.4f}"
    tokens_in = statistics.mean(r.usage.input_tokens for r in records)
    tokens_out = statistics.mean(r.usage.output_tokens for r in records)
    duration = statistics.median(r.duration_s for r in records)
    rows = []
    for stat in summary.scores.values():
        interval = "" if stat.interval is None else f"[{_percent(stat.interval.low)}, {_percent(stat.interval.high)}]"
        pass_hat = " ".join(_percent(value) for value in stat.pass_hat.values())
        cells = [(stat.name, "name"), (_percent(stat.mean), "mean"), (_percent(stat.pass_rate), "pass")]
        cells += [(interval, "ci"), (pass_hat, "pass-k"), (str(stat.scored), "scored"), (str(stat.unscorable), "na")]
        rows.append(f'<tr data-score="{escape(stat.name)}">{"".join(_cell(t, col=c) for t, c in cells)}</tr>')
    return (
        f"<p>{summary.trials} trials over {summary.cases} cases; outcomes: {escape(outcomes)}; "
        f"mean cost/trial {cost}; mean tokens/trial {tokens_in:.0f} in, {tokens_out:.0f} out; "
        f"median duration {duration:.2f} s</p>\n"
        '<table class="summary"><tr><th>score</th><th>mean</th><th>pass</th><th>95% CI</th>'
        "<th>pass^k (k=1..)</th><th>scored</th><th>n/a</th></tr>\n" + "\n".join(rows) + "</table>"
    )


def render_grid(trials: Sequence[ScoredTrial]) -> str:
    """Rows are cases, columns scores, cells passes/scored: where a score fails matters as much as how often."""
    by_case: dict[str, list[ScoredTrial]] = defaultdict(list)
    for trial in trials:
        by_case[trial.record.case_id].append(trial)
    rows = []
    for case_id, case_trials in sorted(by_case.items()):
        cells = [_cell(case_id)]
        for name in NAMES:
            verdicts = [t.verdicts[name] for t in case_trials if t.verdicts[name] is not None]
            passed = sum(bool(v) for v in verdicts)
            if not verdicts:
                cells.append(_cell("n/a", "na", score=name))
            else:
                cls = "pass" if passed == len(verdicts) else "fail" if passed == 0 else "mixed"
                cells.append(_cell(f"{passed}/{len(verdicts)}", cls, score=name))
        rows.append(f'<tr data-case="{escape(case_id)}">{"".join(cells)}</tr>')
    header = "".join(f"<th>{escape(name)}</th>" for name in NAMES)
    return f'<table class="grid"><tr><th>case</th>{header}</tr>\n' + "\n".join(rows) + "</table>"


def _explain(name: str, score: Score) -> str:
    """What a failing scorer said: its reason, then the lines its registry entry explains the metadata
    with (failed checks, unexpected writes, branches left); a multi-line block (a diff) is capped."""
    meta = score.metadata or {}
    reason = meta.get("reason")
    parts = [f"<b>{escape(name)}</b>" + (f": {escape(str(reason))}" if reason else "")]
    items, blocks = [], []
    for line in spec(name).explain(meta):
        if "\n" not in line:
            items.append(f"<li>{escape(line)}</li>")
            continue
        lines = line.splitlines()
        shown = lines[:DIFF_LINES] + ([f"... {len(lines) - DIFF_LINES} more lines"] if len(lines) > DIFF_LINES else [])
        blocks.append(f'<pre class="block">{escape(chr(10).join(shown))}</pre>')
    if items:
        parts.append(f'<ul class="explain">{"".join(items)}</ul>')
    return "".join(parts + blocks)


def render_failure(trial: ScoredTrial) -> str:
    """One failing trial: which, what it called in order, and every scorer's explanation."""
    record = trial.record
    calls = [
        call.name + (" (error)" if call.is_error else "") + (" (decoy)" if call.decoy else "")
        for call in record.tool_calls
    ]
    parts = [
        f"<b>{escape(record.case_id)}</b> trial {record.trial_index}, outcome {escape(record.outcome)}",
        f'<div class="tools">tools: {escape(" → ".join(calls)) or "none"}</div>',
    ]
    if record.outcome != "ok":
        parts.append(
            f'<div class="error">{escape(record.outcome)}: {escape(record.error or "no reason recorded")}</div>'
        )
    parts += [
        f'<div class="explanation" data-score="{escape(n)}">{_explain(n, trial.scores[n])}</div>'
        for n in DETERMINISTIC_NAMES
        if trial.verdicts[n] is False
    ]
    answer = record.final_answer[:ANSWER_CHARS] + ("…" if len(record.final_answer) > ANSWER_CHARS else "")
    if answer:
        parts.append(f'<details><summary>final answer</summary><pre class="answer">{escape(answer)}</pre></details>')
    key = f"{record.case_id}#{record.trial_index}"
    return f'<li class="failure" data-trial="{escape(key)}">' + "\n".join(parts) + "</li>"


def render_group(model: str, scenario: str, trials: Sequence[ScoredTrial]) -> str:
    """One model × scenario: summary, per-case grid, failures."""
    failures = sorted((t for t in trials if t.failed), key=lambda t: (t.record.case_id, t.record.trial_index))
    listed = "\n".join(render_failure(t) for t in failures) or "<li>none</li>"
    return (
        f'<section class="group" data-model="{escape(model)}" data-scenario="{escape(scenario)}">\n'
        f"<h2>{escape(model)} · {escape(scenario)}</h2>\n{render_summary(trials)}\n"
        f"<h3>Per case (passes/scored)</h3>\n{render_grid(trials)}\n"
        f'<h3>Failures ({len(failures)})</h3>\n<ol class="failures">{listed}</ol>\n</section>'
    )


def render_report(run_info: Mapping[str, Any], run_path: Path, trials: Sequence[ScoredTrial]) -> str:
    """The whole page, from data only."""
    groups = [render_group(model, scenario, group) for (model, scenario), group in _groups(trials).items()]
    title = f"Eval report: {run_info.get('run_id') or run_path.name}"
    body = render_header(run_info, run_path, len(trials)) + "\n" + "\n".join(groups)
    return PAGE.substitute(title=escape(str(title)), body=body)


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
    args = parser.parse_args(argv)
    try:
        run_dir, info, records = load(args.run)
        cases = {case.id: case for case in load_cases(args.dataset)}
        page = render_report(info, run_dir, score_run(records, cases))
        out: Path = args.out or run_dir / "report.html"
        out.write_text(page, encoding="utf-8")
    except (RunInputError, DatasetError, OSError) as error:
        print(f"report: error: {error}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
