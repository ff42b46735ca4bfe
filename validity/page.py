"""`docs/validity.md` and the summary line, written from a lab run (nothing on them is typed by hand).

The page is a function of the behaviours, the labels and the verdicts only (no times, no run ids),
so two runs of the same code write the same page and a test can hold it to the code.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.stats import Interval
from analysis.summary import OVERALL
from harness.cases import Case
from validity.baselines import BaselineResult
from validity.behaviours import REPO_ROOT, Behaviour
from validity.lab import LabRun
from validity.rates import VerdictRates, stale_limits, verdict_rates


@dataclass
class LabReport:
    """Everything one `make validity` measured."""

    behaviours: list[Behaviour]
    cases: dict[str, Case]
    runs: list[LabRun]
    baselines: list[BaselineResult] = field(default_factory=list)
    baseline_problems: list[str] = field(default_factory=list)

    def rates(self, run: LabRun) -> dict[str, VerdictRates]:
        return verdict_rates(run.played)

    @property
    def problems(self) -> list[str]:
        """What the lab could not judge, on any server."""
        return [f"{run.server}: {problem}" for run in self.runs for problem in run.problems] + self.baseline_problems

    @property
    def stale(self) -> list[str]:
        return [item for run in self.runs for item in stale_limits(run.played)]

    def unexplained(self, kind: str) -> list[str]:
        """`<server>: <behaviour>: <verdict>` for each disagreement no known limit lists."""
        return [
            f"{run.server}: {d.behaviour}: {d.verdict}"
            for run in self.runs
            for rates in self.rates(run).values()
            for d in rates.unexplained(kind)
        ]

    @property
    def unexpected_passes(self) -> list[str]:
        return sorted({case_id for result in self.baselines for case_id in result.unexpected()})

    @property
    def failed(self) -> bool:
        return bool(self.unexplained("false_alarm") or self.unexplained("miss") or self.unexpected_passes or self.stale)


# What a page's verdicts depend on: the behaviours and their cases, the fixtures, the scorers and the
# lab itself. The page names their hash, so a change to any of them makes the published page stale
# (`tests/validity/test_published_page.py`) until `make validity` writes it again.
INPUTS = ("datasets/validity/*.yaml", "datasets/cases/*.yaml", "datasets/fixtures/*", "scorers/*.py", "validity/*.py")
FINGERPRINT_MARK = "<!-- inputs: "


def lab_scorer_versions() -> dict[str, str]:
    """The versions of the scorers the lab holds to their labels (`scorers.versions`: their code, the
    helpers they reach in harness/, the packages they import)."""
    from scorers.registry import SCORERS
    from scorers.versions import scorer_versions

    return scorer_versions(SCORERS)


def inputs_fingerprint(root: Path = REPO_ROOT, versions: dict[str, str] | None = None) -> str:
    """sha256 over the lab's inputs (path relative to the checkout, then bytes) and the scorers'
    versions, the first 16 hex digits."""
    digest = hashlib.sha256()
    named = lab_scorer_versions() if versions is None else versions
    digest.update(json.dumps(named, sort_keys=True).encode() + b"\0")
    files = sorted({path for pattern in INPUTS for path in root.glob(pattern) if path.is_file()})
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return digest.hexdigest()[:16]


def _percent(count: int, total: int, interval: Interval | None) -> str:
    if not total:
        return "n/a"
    span = f" [{100 * interval.low:.1f}, {100 * interval.high:.1f}]" if interval else ""
    return f"{100 * count / total:.1f}%{span}"


def summary_line(report: LabReport) -> str:
    """The one JSON line `make validity` ends with, for CI and scripts."""
    labels = Counter(item.label for item in report.behaviours)
    by_scorer: dict[str, Any] = {}
    for run in report.runs:
        for name, rates in report.rates(run).items():
            entry = by_scorer.setdefault(name, {"false_alarms": 0, "misses": 0, "known_limits": 0})
            entry["false_alarms"] += len(rates.unexplained("false_alarm"))
            entry["misses"] += len(rates.unexplained("miss"))
            entry["known_limits"] += sum(1 for d in [*rates.false_alarms, *rates.misses] if d.known)
    baselines = {}
    for result in report.baselines:
        passed, judged = result.pass_rates().get(OVERALL, (0, 0))
        baselines[result.model] = round(passed / judged, 4) if judged else None
    body = {
        "behaviours": len(report.behaviours),
        "good": labels["good"],
        "harmful": labels["harmful"],
        "wrong": labels["wrong"],
        "servers": [run.server for run in report.runs],
        "false_alarms": len(report.unexplained("false_alarm")),
        "misses": len(report.unexplained("miss")),
        "known_limits": sum(entry["known_limits"] for entry in by_scorer.values()),
        "stale_known_limits": len(report.stale),
        "problems": len(report.problems),
        "by_scorer": by_scorer,
        "baselines": baselines,
        "cases_a_baseline_passes": report.unexpected_passes,
    }
    return json.dumps({"validity": body}, sort_keys=False)


def coverage(report: LabReport) -> list[str]:
    """Behaviours by label over scenarios, fixtures and workflows."""
    lines = ["| by | value | good | harmful | wrong |", "|---|---|---|---|---|"]
    for by, key in (
        ("scenario", lambda case: case.scenario),
        ("fixture", lambda case: case.fixture),
        ("workflow", lambda case: case.workflow or "(none)"),
    ):
        counts: dict[str, Counter[str]] = {}
        for item in report.behaviours:
            counts.setdefault(key(report.cases[item.case]), Counter())[item.label] += 1
        for value, counter in sorted(counts.items()):
            lines.append(f"| {by} | `{value}` | {counter['good']} | {counter['harmful']} | {counter['wrong']} |")
    return lines


def _rates_table(report: LabReport, run: LabRun) -> list[str]:
    lines = [
        "| verdict | must pass | false alarms (rate, 95% CI) | must fail | misses (rate, 95% CI) | known limits |",
        "|---|---|---|---|---|---|",
    ]
    for name, rates in report.rates(run).items():
        known = sum(1 for d in [*rates.false_alarms, *rates.misses] if d.known)
        lines.append(
            f"| `{name}` | {rates.must_pass} | {len(rates.false_alarms)} "
            f"({_percent(len(rates.false_alarms), rates.must_pass, rates.false_alarm_interval)}) | {rates.must_fail} | "
            f"{len(rates.misses)} ({_percent(len(rates.misses), rates.must_fail, rates.miss_interval)}) | {known} |"
        )
    return lines


def _disagreements(report: LabReport, run: LabRun) -> list[str]:
    lines: list[str] = []
    limits = {item.id: item.known_limit for item in report.behaviours}
    for rates in report.rates(run).values():
        for d in sorted([*rates.false_alarms, *rates.misses], key=lambda d: (d.verdict, d.behaviour)):
            kind = "false alarm" if d.kind == "false_alarm" else "miss"
            status = "known limit" if d.known else "**not explained**"
            lines.append(f"- `{d.behaviour}`: `{d.verdict}` {kind} ({status}): {d.reason}")
            for limit in limits.get(d.behaviour, []):
                if d.known and limit.verdict == d.verdict:
                    lines.append(f"  - why: {limit.reason}; what would fix it: {limit.fix}")
    return lines or ["None."]


def _baselines(report: LabReport) -> list[str]:
    if not report.baselines:
        return ["Not run (`--no-baselines`)."]
    names = sorted({name for result in report.baselines for name in result.pass_rates()})
    lines = ["| baseline | " + " | ".join(f"`{n}`" for n in names) + " |", "|---|" + "---|" * len(names)]
    for result in report.baselines:
        rates = result.pass_rates()
        cells = [_percent(*rates[n], None) if n in rates else "n/a" for n in names]
        lines.append(f"| `{result.model}` | " + " | ".join(cells) + " |")
    workflows = sorted({w for result in report.baselines for w in result.by_workflow()})
    lines += ["", "`all_scores` by workflow:", ""]
    lines += ["| baseline | " + " | ".join(f"`{w}`" for w in workflows) + " |", "|---|" + "---|" * len(workflows)]
    for result in report.baselines:
        rates = result.by_workflow()
        cells = [f"{rates[w][0]}/{rates[w][1]}" if w in rates else "-" for w in workflows]
        lines.append(f"| `{result.model}` | " + " | ".join(cells) + " |")
    lines += ["", "Cases a baseline passes (`all_scores`):", ""]
    passed = False
    for result in report.baselines:
        for case_id, why in result.expected().items():
            lines.append(f"- `{result.model}` passes `{case_id}`, as it may: {why}")
            passed = True
        for case_id in result.unexpected():
            lines.append(f"- `{result.model}` passes `{case_id}`: **unexpected**, a case to fix")
            passed = True
    if not passed:
        lines.append("- none")
    return lines


def _arguable(report: LabReport) -> list[str]:
    lines = [f"- `{item.id}` ({item.label}): {item.arguable}" for item in report.behaviours if item.arguable]
    return lines or ["None."]


def render_page(report: LabReport, command: Sequence[str]) -> str:
    """The whole of docs/validity.md."""
    labels = Counter(item.label for item in report.behaviours)
    out = [
        "# What did the verifier lab measure?",
        "",
        f"<!-- generated by `{' '.join(command)}`; do not edit by hand -->",
        f"{FINGERPRINT_MARK}{inputs_fingerprint()} -->",
        "",
        "Scored by "
        + ", ".join(f"`{name}@{version}`" for name, version in lab_scorer_versions().items())
        + " (`python -m scorers.registry` prints today's; a page naming others is stale).",
        "",
        f"{len(report.behaviours)} labelled behaviours ({labels['good']} good, {labels['harmful']} harmful, "
        f"{labels['wrong']} wrong), each labelled before it ran, played by a scripted model through the real "
        "CLI. A *false alarm* is a good behaviour a verdict fails; a *miss* is a harmful or wrong behaviour a "
        "verdict passes, counted only where the label makes that verdict responsible "
        "([how the lab works](verifier-lab.md)).",
        "",
        "The run's summary line (`make validity` prints it last; it exits 1 on a disagreement no known "
        "limit lists, on a stale known limit, or on a case a baseline passes that it should not):",
        "",
        "```json",
        summary_line(report),
        "```",
        "",
        "## Coverage",
        "",
        *coverage(report),
    ]
    for run in report.runs:
        out += [
            "",
            f"## On `EVAL_SERVER={run.server}` ({len(run.played)} behaviours played)",
            "",
            *_rates_table(report, run),
            "",
            "Disagreements:",
            "",
            *_disagreements(report, run),
        ]
    out += ["", "## Baselines that should fail", "", *_baselines(report)]
    out += ["", "## Labels a reader could argue", "", *_arguable(report), ""]
    return "\n".join(out)
