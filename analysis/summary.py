"""Summaries of one experiment's trials: per-score pass rates with intervals, pass^k, infra errors.

Input is plain data (one `TrialScores` per trial), so the same summary serves the Braintrust
reporter, a results store read back from disk, and tests.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from analysis.stats import Interval, mean, pass_hat_k, wilson_interval

PASS_THRESHOLD = 0.8  # binary scores pass at 1; the factuality judge's "superset" (0.8) counts as a pass
OVERALL = "all_scores"


@dataclass(frozen=True)
class TrialScores:
    case_id: str
    scores: dict[str, float | None]
    outcome: str = "ok"  # the trial record's outcome: ok, turn_cap, timeout, infra_error
    cost_usd: float | None = None
    cause: str | None = None  # why it failed (analysis.attribution), None when it did not (or is not known)


@dataclass
class ScoreStat:
    name: str
    scored: int = 0
    unscorable: int = 0
    passed: int = 0
    mean: float | None = None
    interval: Interval | None = None
    pass_hat: dict[int, float | None] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None


@dataclass
class ExperimentSummary:
    trials: int
    cases: int
    outcomes: dict[str, int]
    scores: dict[str, ScoreStat]
    mean_cost_usd: float | None
    causes: dict[str, int] = field(default_factory=dict)  # failing trials per cause (analysis.attribution)


def _passes(value: float) -> bool:
    return value >= PASS_THRESHOLD


def summarise(trials: list[TrialScores], max_k: int = 4) -> ExperimentSummary:
    """Per-score statistics; an overall verdict needs every score that could be computed to pass."""
    names = sorted({name for trial in trials for name in trial.scores})
    per_case: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    values: dict[str, list[float]] = defaultdict(list)
    unscorable: dict[str, int] = defaultdict(int)
    for trial in trials:
        verdicts: list[bool] = []
        for name in names:
            value = trial.scores.get(name)
            if value is None:
                unscorable[name] += 1
                continue
            values[name].append(value)
            per_case[name][trial.case_id].append(_passes(value))
            verdicts.append(_passes(value))
        if verdicts:
            per_case[OVERALL][trial.case_id].append(all(verdicts))
        else:
            unscorable[OVERALL] += 1
    stats: dict[str, ScoreStat] = {}
    for name in [*names, OVERALL]:
        cases = per_case.get(name, {})
        passed = sum(sum(results) for results in cases.values())
        scored = sum(len(results) for results in cases.values())
        counts = [(sum(results), len(results)) for results in cases.values()]
        ks = range(1, max(1, min((n for _, n in counts), default=1)) + 1)
        stats[name] = ScoreStat(
            name=name,
            scored=scored,
            unscorable=unscorable.get(name, 0),
            passed=passed,
            mean=mean(values[name]) if name != OVERALL else (passed / scored if scored else None),
            interval=wilson_interval(passed, scored),
            pass_hat={k: pass_hat_k(counts, k) for k in ks if k <= max_k},
        )
    outcomes: dict[str, int] = defaultdict(int)
    for trial in trials:
        outcomes[trial.outcome] += 1
    costs = [trial.cost_usd for trial in trials if trial.cost_usd is not None]
    return ExperimentSummary(
        trials=len(trials),
        cases=len({trial.case_id for trial in trials}),
        outcomes=dict(outcomes),
        scores=stats,
        mean_cost_usd=mean(costs),
        causes=count_causes(trial.cause for trial in trials),
    )


def count_causes(causes: Iterable[str | None]) -> dict[str, int]:
    """Failing trials per cause (`analysis.attribution`), the most frequent first; None is a trial that passed."""
    counted = Counter(cause for cause in causes if cause is not None)
    return dict(sorted(counted.items(), key=lambda item: (-item[1], item[0])))


def describe_causes(counts: Mapping[str, int]) -> str:
    """`model:tool_choice 3, model:sql 1`: what the console line and the report print."""
    return ", ".join(f"{cause} {count}" for cause, count in counts.items())


def percent(value: float | None, signed: bool = False) -> str:
    """A rate as the pages and tables show it: `42.5%` (`+42.5%` signed), or `n/a`."""
    if value is None:
        return "n/a"
    return f"{100 * value:+.1f}%" if signed else f"{100 * value:.1f}%"


def _percent(value: float | None) -> str:
    return "   n/a" if value is None else f"{100 * value:5.1f}%"


def render(title: str, summary: ExperimentSummary, lead: Sequence[str] = ()) -> str:
    """A plain-text table a person can read in a terminal or a CI log; `lead` lines (main changed
    without approval) come right under the title, before any number, so they are read first."""
    outcome_text = ", ".join(f"{name} {count}" for name, count in sorted(summary.outcomes.items()))
    cost = "n/a" if summary.mean_cost_usd is None else f"${summary.mean_cost_usd:.4f}"
    lines = [
        f"== {title}",
        *(f"   {line}" for line in lead),
        f"   {summary.trials} trials over {summary.cases} cases; outcomes: {outcome_text}; mean cost/trial: {cost}",
        f"   {'score':<24} {'mean':>6} {'pass':>6} {'95% CI':>15} {'pass^k (k=1..)':<28} {'scored':>6} {'n/a':>4}",
    ]
    for stat in summary.scores.values():
        interval = "" if stat.interval is None else f"[{_percent(stat.interval.low)},{_percent(stat.interval.high)}]"
        pass_hat = " ".join(_percent(value).strip() for value in stat.pass_hat.values())
        lines.append(
            f"   {stat.name:<24} {_percent(stat.mean):>6} {_percent(stat.pass_rate):>6} {interval:>15} "
            f"{pass_hat:<28} {stat.scored:>6} {stat.unscorable:>4}"
        )
    if summary.causes:
        failed = sum(summary.causes.values())
        trials = f"{failed} failing trial{'s' if failed != 1 else ''}"
        lines.append(f"   failures by cause ({trials}): {describe_causes(summary.causes)}")
    return "\n".join(lines)
