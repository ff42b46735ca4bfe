"""Pictures for the HTML pages: matplotlib figures written as inline SVG (no JavaScript, opens offline).

Why matplotlib's SVG backend: a well-kept plotting library draws the marks and the text is escaped
by it, not by hand-built SVG strings. Each drawn group carries an id (`gid`) naming what it shows
(`pass-rate-bars`, `decoy-curve`, `cost-points`, `paired-differences`), so a browser test can find
it. Output is deterministic (fixed hash salt, no date), so a committed picture only changes when
its numbers do.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.stats import wilson_interval

plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "mcp-evals", "font.size": 9})
PASS, FAIL, NEUTRAL = "#2e7d32", "#c62828", "#546e7a"
PALETTE = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e", "#283593")


@dataclass(frozen=True)
class Rate:
    """A pass count over scored trials, drawn as its rate with a Wilson 95% interval."""

    passed: int
    trials: int

    @property
    def value(self) -> float:
        return self.passed / self.trials if self.trials else 0.0

    def errors(self) -> tuple[float, float]:
        interval = wilson_interval(self.passed, self.trials)
        if interval is None:
            return (0.0, 0.0)
        return (max(0.0, self.value - interval.low), max(0.0, interval.high - self.value))


def to_svg(figure: Figure) -> str:
    """The figure as an `<svg>` element for inline use (XML prolog and doctype dropped)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def pass_rates(experiments: Sequence[tuple[str, dict[str, Rate]]]) -> str:
    """Pass rate with its 95% interval per score (rows), one bar per experiment, side by side."""
    scores = list(dict.fromkeys(score for _, rates in experiments for score in rates))
    count = max(1, len(experiments))
    height = 0.8 / count
    figure, axes = plt.subplots(figsize=(6.5, 0.8 + 0.3 * len(scores) * count))
    for index, (label, rates) in enumerate(experiments):
        positions = [row + (count - 1 - index) * height for row in range(len(scores)) if scores[row] in rates]
        shown = [rates[score] for score in scores if score in rates]
        errors = [[rate.errors()[0] for rate in shown], [rate.errors()[1] for rate in shown]]
        axes.barh(
            positions,
            [rate.value for rate in shown],
            height=height * 0.9,
            xerr=errors,
            color=PALETTE[index % len(PALETTE)],
            ecolor="#212121",
            capsize=2,
            label=label,
            gid=f"pass-rate-bars-{index}",
        )
    axes.set_yticks([row + 0.4 - height / 2 for row in range(len(scores))], scores)
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    axes.set_xlabel("pass rate (95% Wilson interval)")
    axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    return to_svg(figure)


def _pass_rate_axes(figure: Figure, axes: Axes, xlabel: str) -> str:
    """The frame both pass-rate charts share (0-100% on y, a legend, a light grid), as SVG."""
    axes.set_ylim(-0.02, 1.02)
    axes.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    axes.set_xlabel(xlabel)
    axes.set_ylabel("all_scores pass rate")
    axes.legend(fontsize=8, frameon=False)
    axes.grid(alpha=0.3)
    return to_svg(figure)


def decoy_curve(series: dict[str, list[tuple[int, Rate]]]) -> str:
    """Pass rate against the number of decoy tools, one line per model, with 95% intervals."""
    figure, axes = plt.subplots(figsize=(6.5, 3.2))
    for index, (label, points) in enumerate(sorted(series.items())):
        points = sorted(points)
        errors = [[rate.errors()[0] for _, rate in points], [rate.errors()[1] for _, rate in points]]
        axes.errorbar(
            [decoys for decoys, _ in points],
            [rate.value for _, rate in points],
            yerr=errors,
            marker="o",
            capsize=3,
            color=PALETTE[index % len(PALETTE)],
            label=label,
            gid=f"decoy-curve-{index}",
        )
    return _pass_rate_axes(figure, axes, "decoy tools added")


def cost_vs_pass(points: Sequence[tuple[str, float, Rate]]) -> str:
    """Pass rate against mean cost per trial, one point per model, with 95% intervals."""
    figure, axes = plt.subplots(figsize=(6.5, 3.2))
    for index, (label, cost, rate) in enumerate(points):
        low, high = rate.errors()
        axes.errorbar(
            [cost],
            [rate.value],
            yerr=[[low], [high]],
            fmt="o",
            capsize=3,
            color=PALETTE[index % len(PALETTE)],
            label=label,
            gid=f"cost-points-{index}",
        )
    return _pass_rate_axes(figure, axes, "mean cost per trial (USD)")


def paired_differences(cases: Sequence[tuple[str, Rate, Rate]]) -> str:
    """Per case, B's pass rate minus A's over the paired trials: green where B is better, red worse."""
    figure, axes = plt.subplots(figsize=(7.5, 0.6 + 0.24 * max(1, len(cases))))
    labels = [case_id for case_id, _, _ in cases]
    differences = [b.value - a.value for _, a, b in cases]
    colours = [PASS if d > 0 else FAIL if d < 0 else NEUTRAL for d in differences]
    rows = list(range(len(cases)))
    axes.hlines(rows, 0, differences, colors=colours, linewidth=2, gid="paired-differences-stems")
    axes.scatter(differences, rows, color=colours, zorder=3, s=22, gid="paired-differences")
    axes.axvline(0, color="#212121", linewidth=0.8)
    axes.set_yticks(rows, labels)
    axes.invert_yaxis()
    axes.set_xlim(-1.05, 1.05)
    axes.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    axes.set_xlabel("B − A pass rate (all scores), per case over its paired trials")
    axes.grid(axis="x", alpha=0.3)
    return to_svg(figure)
