"""The report's pictures, computed from re-scored trials: pass rates per score and experiment, the
decoy-sweep degradation curve, and pass rate against cost per trial across models."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from analysis.charts import Rate, cost_vs_pass, decoy_curve, pass_rates
from analysis.summary import OVERALL
from harness.recording.records import TrialRecord


class Judged(Protocol):
    """A re-scored trial, as `analysis.report` holds it."""

    record: TrialRecord
    verdicts: dict[str, bool | None]


def rate(trials: Sequence[Judged], score: str) -> Rate:
    judged = [t.verdicts.get(score) for t in trials if t.verdicts.get(score) is not None]
    return Rate(sum(1 for v in judged if v), len(judged))


def draw_pictures(trials: Sequence[Any]) -> dict[str, str | None]:
    """SVG per picture; a picture with nothing to show (one decoy count, no known cost) is None."""
    groups: dict[tuple[str, str, int], list[Judged]] = defaultdict(list)
    by_model: dict[str, list[Judged]] = defaultdict(list)
    for trial in trials:
        config = trial.record.config
        groups[(config.model, trial.case.scenario, config.decoy_count)].append(trial)
        by_model[config.model].append(trial)
    decoy_counts = sorted({decoys for _, _, decoys in groups})
    names = list(dict.fromkeys(name for t in trials for name in t.verdicts))
    names = [name for name in names if name != OVERALL] + [OVERALL]
    experiments = []
    for (model, scenario, decoys), members in sorted(groups.items()):
        label = f"{model} · {scenario}" + (f" · {decoys} decoys" if len(decoy_counts) > 1 else "")
        rates = {name: rate(members, name) for name in names if rate(members, name).trials}
        experiments.append((label, rates))
    curve = None
    if len(decoy_counts) > 1:
        series: dict[str, list[tuple[int, Rate]]] = defaultdict(list)
        for model, members in by_model.items():
            by_decoys: dict[int, list[Judged]] = defaultdict(list)
            for trial in members:
                by_decoys[trial.record.config.decoy_count].append(trial)
            series[model] = [(decoys, rate(group, OVERALL)) for decoys, group in sorted(by_decoys.items())]
        curve = decoy_curve(series)
    costs = []
    for model, members in sorted(by_model.items()):
        known = [t.record.cost_usd for t in members if t.record.cost_usd is not None]
        if known:
            costs.append((model, sum(known) / len(known), rate(members, OVERALL)))
    return {
        "pass_rates": pass_rates(experiments),
        "decoys": curve,
        "cost": cost_vs_pass(costs) if costs else None,
    }
