"""The paired comparison as text (a table, pass^k, cases needed, verdicts by case vote) and as JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from analysis.compare_stats import CaseChange, Comparison, ScoreComparison
from analysis.paired import UNIT
from analysis.runs import Group
from analysis.stats import ALPHA, CASES_NEEDED_CAP, Interval
from analysis.summary import percent


def _interval(interval: Interval | None, signed: bool = False) -> str:
    if interval is None:
        return ""
    return f"[{percent(interval.low, signed)}, {percent(interval.high, signed)}]"


def _changes(title: str, changes: list[CaseChange], width: int = 118) -> list[str]:
    """A wrapped paragraph listing the cases whose pass count moved, as `case a/n→b/n` (never split)."""
    if not changes:
        return []
    items = [f"{c.case_id} {c.a_passed}/{c.trials}→{c.b_passed}/{c.trials}" for c in changes]
    lines = [f"    {title} ({len(changes)}):"]
    for position, item in enumerate(items):
        text = item + ("," if position < len(items) - 1 else "")
        if len(lines[-1]) + 1 + len(text) > width:
            lines.append("     ")
        lines[-1] += " " + text
    return lines


def _p(value: float) -> str:
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def explain(score: ScoreComparison) -> str:
    """The verdict with its evidence: the case votes, the exact p-value, and the trial pairs described."""
    return (
        f"{score.verdict} (p = {score.p_value:.4g}, one vote per case: {score.votes.describe()}; "
        f"trial pairs: {score.a_pass_b_fail} A-pass/B-fail, {score.a_fail_b_pass} A-fail/B-pass)"
    )


def render_table(comparison: Comparison) -> str:
    """The main table: one row per score (pass rates, intervals, difference, case votes, test, verdict).
    `A>B`, `B>A` and `tie` count cases, the unit the sign test and the bootstrap draw."""
    lines = [
        f"{'score':<25} {'cases':>5} {'pairs':>5} {'A pass':>7} {'A 95% CI':>16} {'B pass':>7} {'B 95% CI':>16} "
        f"{'B−A':>8} {'bootstrap 95% CI':>19} {'A>B':>4} {'B>A':>4} {'tie':>4} {'p':>7}  verdict"
    ]
    for s in comparison.scores.values():
        lines.append(
            f"{s.name:<25} {s.cases:>5} {s.pairs:>5} {percent(s.a.rate):>7} {_interval(s.a.interval):>16} "
            f"{percent(s.b.rate):>7} {_interval(s.b.interval):>16} {percent(s.difference, True):>8} "
            f"{_interval(s.bootstrap, True):>19} {s.cases_a_better:>4} {s.cases_b_better:>4} {s.cases_tied:>4} "
            f"{_p(s.p_value):>7}  {s.verdict}"
        )
    return "\n".join(lines)


def render(comparison: Comparison, group_a: Group, group_b: Group) -> str:
    """A plain-text report: one table row per score, then pass^k, verdicts and per-case changes."""
    c = comparison
    lines = [
        f"A: {group_a.label}",
        f"B: {group_b.label}",
        f"paired {c.paired} trials by (case_id, trial_index) over {c.paired_cases} cases; "
        f"unpaired: {c.unpaired_a} of {c.trials_a} in A, {c.unpaired_b} of {c.trials_b} in B",
        "unit: the case (its paired trials cast one vote: A>B, B>A or tie; the verdict tests the votes)",
        "",
        render_table(c),
    ]
    lines += ["", "pass^k (k = 1..fewest paired trials of a case)"]
    for s in c.scores.values():
        a, b = (" ".join(percent(v) for v in stat.pass_hat.values()) or "n/a" for stat in (s.a, s.b))
        lines.append(f"  {s.name:<25} A: {a:<30} B: {b}")
    lines += [
        "",
        f"cases needed to detect the observed split of votes (exact sign test, alpha {ALPHA}, 80% power; "
        "ties as often as here)",
    ]
    for s in c.scores.values():
        if s.cases_needed is not None:
            needed = f"{s.cases_needed} cases"
        elif s.cases_a_better != s.cases_b_better:
            needed = f"more than {CASES_NEEDED_CAP} cases that do not tie"
        else:
            needed = "—"
        lines.append(f"  {s.name:<25} {needed}")
    lines += [
        "",
        f"verdicts (exact sign test over cases, one vote per case, alpha {ALPHA}; bootstrap over cases, "
        f"{c.resamples} resamples, seed {c.seed})",
    ]
    for s in c.scores.values():
        lines.append(f"  {s.name}: {explain(s)}")
        if s.dropped:
            lines.append(
                f"    unscorable: {s.dropped} pairs dropped ({s.unscorable_a} trials in A, {s.unscorable_b} in B)"
            )
        lines += _changes("improved", s.improved) + _changes("regressed", s.regressed)
    return "\n".join(lines)


def as_json(comparison: Comparison, group_a: Group, group_b: Group) -> dict[str, Any]:
    """The same numbers as `render`, as one JSON-ready object."""

    def group(g: Group) -> dict[str, Any]:
        return {"run": str(g.path), "model": g.model, "variants": g.variants, "trials": len(g.records)}

    data = asdict(comparison)
    for name, score in data["scores"].items():
        score["a"]["rate"] = comparison.scores[name].a.rate
        score["b"]["rate"] = comparison.scores[name].b.rate
        score["unit"] = UNIT  # what cases_b_better, cases_a_better, cases_tied and the test count
    return {"a": group(group_a), "b": group(group_b), "alpha": ALPHA, "unit": UNIT, **data}
