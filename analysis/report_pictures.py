"""The report's pictures, computed from re-scored trials: pass rates per score and experiment, the
decoy-sweep degradation curve, and pass rate against cost per trial across models.

A picture that would show nothing true (one decoy count: no curve; no model that spent money: every
point at $0) is not drawn; its `note` says in words why, so an absent picture is never a mystery."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from analysis.charts import Rate, cost_vs_pass, decoy_curve, pass_rates
from analysis.summary import OVERALL
from harness.recording.records import TrialRecord


class Judged(Protocol):
    """A re-scored trial, as `analysis.report` holds it."""

    record: TrialRecord
    verdicts: dict[str, bool | None]


@dataclass(frozen=True)
class Picture:
    """One picture as inline SVG, or None with the reason in `note`."""

    svg: str | None
    note: str = ""


def rate(trials: Sequence[Judged], score: str) -> Rate:
    judged = [t.verdicts.get(score) for t in trials if t.verdicts.get(score) is not None]
    return Rate(sum(1 for v in judged if v), len(judged), len(trials) - len(judged))


def experiment_label(model: str, scenario: str, decoys: int | None) -> str:
    return f"{model} · {scenario}" + ("" if decoys is None else f" · {decoys} decoys")


def _curve(by_model: dict[str, list[Judged]], decoy_counts: list[int]) -> Picture:
    if len(decoy_counts) < 2:
        shown = f"{decoy_counts[0]} decoy tools" if decoy_counts else "no trials"
        return Picture(None, f"No degradation curve: every trial saw {shown} (a sweep is EVAL_DECOY_SWEEP).")
    series: dict[str, list[tuple[int, Rate]]] = {}
    for model, members in by_model.items():
        by_decoys: dict[int, list[Judged]] = defaultdict(list)
        for trial in members:
            by_decoys[trial.record.config.decoy_count].append(trial)
        series[model] = [(decoys, rate(group, OVERALL)) for decoys, group in sorted(by_decoys.items())]
    return Picture(decoy_curve(series))


def _cost(by_model: dict[str, list[Judged]]) -> Picture:
    """Only models that spent money: a control agent's $0 or an unpriced model's unknown cost is named
    in the note, not drawn as a point on an axis around zero."""
    points, free, unpriced = [], [], []
    for model, members in sorted(by_model.items()):
        known = [t.record.cost_usd for t in members if t.record.cost_usd is not None]
        mean = sum(known) / len(known) if known else None
        if mean is None:
            unpriced.append(model)
        elif mean <= 0:
            free.append(model)
        else:
            points.append((model, mean, rate(members, OVERALL)))
    left_out = ([f"{', '.join(free)} ($0 a trial)"] if free else []) + (
        [f"{', '.join(unpriced)} (no known price)"] if unpriced else []
    )
    note = f"Left out: {'; '.join(left_out)}." if left_out else ""
    if not points:
        return Picture(None, f"No cost picture: no model in this run has a cost above $0. {note}".strip())
    return Picture(cost_vs_pass(points), note)


def draw_pictures(trials: Sequence[Any]) -> dict[str, Picture]:
    """Every picture of the report by name (`pass_rates`, `decoys`, `cost`)."""
    groups: dict[tuple[str, str, int], list[Judged]] = defaultdict(list)
    by_model: dict[str, list[Judged]] = defaultdict(list)
    for trial in trials:
        config = trial.record.config
        groups[(config.model, trial.case.scenario, config.decoy_count)].append(trial)
        by_model[config.model].append(trial)
    decoy_counts = sorted({decoys for _, _, decoys in groups})
    names = list(dict.fromkeys(name for t in trials for name in t.verdicts))
    names = [name for name in names if name != OVERALL] + [OVERALL]
    experiments = [
        (
            experiment_label(model, scenario, decoys if len(decoy_counts) > 1 else None),
            {name: rate(members, name) for name in names},
        )
        for (model, scenario, decoys), members in sorted(groups.items())
    ]
    return {
        "pass_rates": Picture(pass_rates(experiments)),
        "decoys": _curve(by_model, decoy_counts),
        "cost": _cost(by_model),
    }
