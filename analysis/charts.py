"""Pictures for the HTML pages: matplotlib figures written as inline SVG (no JavaScript, opens offline).

Why matplotlib's SVG backend: a well-kept plotting library draws the marks and the text is escaped
by it, not by hand-built SVG strings. Each drawn group carries an id (`gid`) naming what it shows
(`pass-rate-bars-<i>`, `pass-rate-value-<i>-<score>`, `decoy-curve`, `cost-points`,
`paired-differences`), so a browser test can find it. Output is deterministic (fixed hash salt, no
date), so a committed picture only changes when its numbers do.

Every mark says its number in words beside it (a picture is read at a glance, not measured), a 0%
bar is drawn as a stub so it stays visible, and a score nobody could judge is a labelled gap ("n/a")
rather than a missing bar that looks like 0%.
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
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, PercentFormatter
from matplotlib.transforms import blended_transform_factory

from analysis.stats import wilson_interval

plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "mcp-evals", "font.size": 9})
PASS, FAIL, NEUTRAL = "#2e7d32", "#c62828", "#546e7a"
PALETTE = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e", "#283593")
STUB = 0.01  # the width a 0% bar is drawn with: visible, and far below any rate one trial can make
BAR_INCHES = 0.17  # the height of one bar: its value label (7.5 pt) fits beside it


@dataclass(frozen=True)
class Rate:
    """A pass count over scored trials, drawn as its rate with a Wilson 95% interval; `unscored`
    counts the trials that could not be judged (n/a), which the rate leaves out."""

    passed: int
    trials: int
    unscored: int = 0

    @property
    def value(self) -> float:
        return self.passed / self.trials if self.trials else 0.0

    def errors(self) -> tuple[float, float]:
        interval = wilson_interval(self.passed, self.trials)
        if interval is None:
            return (0.0, 0.0)
        return (max(0.0, self.value - interval.low), max(0.0, interval.high - self.value))

    def label(self) -> str:
        """`100% (4/4)`, `50% (1/2, 2 n/a)`, or `n/a (4 trials)` when no trial could be judged."""
        if not self.trials:
            return f"n/a ({self.unscored} trial{'' if self.unscored == 1 else 's'})"
        unscored = f", {self.unscored} n/a" if self.unscored else ""
        return f"{self.value:.0%} ({self.passed}/{self.trials}{unscored})"


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def to_svg(figure: Figure) -> str:
    """The figure as an `<svg>` element for inline use (XML prolog and doctype dropped)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def pass_rates(experiments: Sequence[tuple[str, dict[str, Rate]]]) -> str:
    """Pass rate with its 95% interval per score (rows), one bar per experiment, stacked top to bottom
    in the legend's order; each bar's value is written at the right, n/a as a hatched, labelled gap."""
    scores = list(dict.fromkeys(score for _, rates in experiments for score in rates))
    count = max(1, len(experiments))
    slot = 0.8 / count
    figure, axes = plt.subplots(figsize=(6.5, max(1.2, BAR_INCHES * count * len(scores) / 0.8)))
    at_right = blended_transform_factory(axes.transAxes, axes.transData)
    for index, (_, rates) in enumerate(experiments):
        shade = colour(index)
        rows = [(row + index * slot, score, rates[score]) for row, score in enumerate(scores) if score in rates]
        scored = [(y, score, rate) for y, score, rate in rows if rate.trials]
        axes.barh(
            [y for y, _, _ in scored],
            [max(rate.value, STUB) for _, _, rate in scored],
            height=slot * 0.9,
            color=shade,
            gid=f"pass-rate-bars-{index}",
        )
        axes.errorbar(
            [rate.value for _, _, rate in scored],
            [y for y, _, _ in scored],
            xerr=[[rate.errors()[0] for _, _, rate in scored], [rate.errors()[1] for _, _, rate in scored]],
            fmt="none",
            ecolor="#212121",
            elinewidth=0.8,
            capsize=2,
            gid=f"pass-rate-ci-{index}",
        )
        for y, score, rate in rows:
            if not rate.trials:
                gap = Rectangle((0, y - slot * 0.45), 1, slot * 0.9, fill=False, hatch="////", edgecolor=shade)
                gap.set(alpha=0.5, linewidth=0, gid=f"pass-rate-na-{index}-{score}")
                axes.add_patch(gap)
            axes.text(
                1.01,
                y,
                rate.label(),
                transform=at_right,
                va="center",
                fontsize=7.5,
                color=shade,
                gid=f"pass-rate-value-{index}-{score}",
            )
    axes.set_yticks([row + (count - 1) * slot / 2 for row in range(len(scores))], scores)
    axes.set_ylim(len(scores) - slot / 2 - 0.1, -slot / 2 - 0.1)  # top to bottom: first score, first experiment
    axes.set_xlim(0, 1)
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlabel("pass rate (95% Wilson interval); n/a: no trial could be judged")
    axes.grid(axis="x", alpha=0.3)
    handles = [Patch(color=colour(index), label=label) for index, (label, _) in enumerate(experiments)]
    legend = axes.legend(
        handles=handles, loc="lower left", bbox_to_anchor=(0, 1.01), fontsize=8, frameon=False, borderaxespad=0
    )
    for index, text in enumerate(legend.get_texts()):
        text.set_gid(f"pass-rate-legend-{index}")
    return to_svg(figure)


def _pass_rate_axes(figure: Figure, axes: Axes, xlabel: str) -> str:
    """The frame both pass-rate charts share (0-100% on y, a legend, a light grid), as SVG."""
    axes.set_ylim(-0.02, 1.1)
    axes.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlabel(xlabel)
    axes.set_ylabel("all_scores pass rate")
    axes.legend(fontsize=8, frameon=False, loc="lower left", bbox_to_anchor=(0, 1.01), borderaxespad=0)
    axes.grid(alpha=0.3)
    return to_svg(figure)


def _value_label(axes: Axes, x: float, rate: Rate, shade: str, gid: str, prefix: str = "", left: bool = False) -> None:
    """A point's value beside it; `left` for points near the right edge, so the text stays in the frame."""
    axes.annotate(
        prefix + rate.label(),
        (x, rate.value if rate.trials else 0.0),
        textcoords="offset points",
        xytext=(-5 if left else 5, 4),
        ha="right" if left else "left",
        fontsize=7,
        color=shade,
        gid=gid,
    )


def decoy_curve(series: dict[str, list[tuple[int, Rate]]]) -> str:
    """Pass rate against the number of decoy tools, one line per model, with 95% intervals and each
    point's value; a decoy count no trial of a model could be judged at is written n/a, not drawn at 0."""
    figure, axes = plt.subplots(figsize=(6.5, 3.2))
    counts: set[int] = set()
    for index, (label, points) in enumerate(sorted(series.items())):
        points = sorted(points)
        counts.update(decoys for decoys, _ in points)
        judged = [(decoys, rate) for decoys, rate in points if rate.trials]
        errors = [[rate.errors()[0] for _, rate in judged], [rate.errors()[1] for _, rate in judged]]
        axes.errorbar(
            [decoys for decoys, _ in judged],
            [rate.value for _, rate in judged],
            yerr=errors,
            marker="o",
            capsize=3,
            color=colour(index),
            label=label,
            gid=f"decoy-curve-{index}",
        )
        last = max(decoys for decoys, _ in points)
        for decoys, rate in points:
            _value_label(axes, decoys, rate, colour(index), f"decoy-value-{index}-{decoys}", left=decoys == last)
    axes.set_xticks(sorted(counts))
    return _pass_rate_axes(figure, axes, "decoy tools added")


def dollars(top: float) -> FuncFormatter:
    """Cost ticks in dollars with as many decimals as the axis's range needs ($0, $0.002, ... $0.014)."""
    decimals = 0 if top >= 10 else 2 if top >= 0.1 else 3 if top >= 0.01 else 4

    def tick(value: float, _position: object = None) -> str:
        return "$0" if abs(value) < 10 ** -(decimals + 1) else f"${value:.{decimals}f}"

    return FuncFormatter(tick)


def cost_vs_pass(points: Sequence[tuple[str, float, Rate]]) -> str:
    """Pass rate against mean cost per trial, one point per model (priced, spending models only), with
    95% intervals and each point's value; the cost axis starts at $0 and ends just past the dearest."""
    figure, axes = plt.subplots(figsize=(6.5, 3.2))
    top = 1.3 * max((cost for _, cost, _ in points), default=1.0)
    for index, (label, cost, rate) in enumerate(points):
        low, high = rate.errors()
        axes.errorbar(
            [cost],
            [rate.value],
            yerr=[[low], [high]],
            fmt="o",
            capsize=3,
            color=colour(index),
            label=label,
            gid=f"cost-points-{index}",
        )
        prefix = f"${cost:.3g}/trial: "
        _value_label(axes, cost, rate, colour(index), f"cost-value-{index}", prefix, left=cost > 0.6 * top)
    axes.set_xlim(0, top)
    axes.xaxis.set_major_formatter(dollars(top))
    return _pass_rate_axes(figure, axes, "mean cost per trial (USD)")


def paired_differences(cases: Sequence[tuple[str, Rate, Rate]]) -> str:
    """Per case, B's pass rate minus A's over the paired trials: green where B is better, red worse,
    with both counts and the difference written at the right of each case."""
    figure, axes = plt.subplots(figsize=(7.5, 0.6 + 0.24 * max(1, len(cases))))
    labels = [case_id for case_id, _, _ in cases]
    differences = [b.value - a.value for _, a, b in cases]
    colours = [PASS if d > 0 else FAIL if d < 0 else NEUTRAL for d in differences]
    rows = list(range(len(cases)))
    axes.hlines(rows, 0, differences, colors=colours, linewidth=2, gid="paired-differences-stems")
    axes.scatter(differences, rows, color=colours, zorder=3, s=22, gid="paired-differences")
    at_right = blended_transform_factory(axes.transAxes, axes.transData)
    for row, ((case_id, a, b), difference, shade) in enumerate(zip(cases, differences, colours, strict=True)):
        axes.text(
            1.01,
            row,
            f"{difference:+.0%}  (A {a.passed}/{a.trials}, B {b.passed}/{b.trials})",
            transform=at_right,
            va="center",
            fontsize=7.5,
            color=shade,
            gid=f"paired-value-{case_id}",
        )
    axes.axvline(0, color="#212121", linewidth=0.8)
    axes.set_yticks(rows, labels)
    axes.set_ylim(len(cases) - 0.5, -0.5)
    axes.set_xlim(-1.05, 1.05)
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlabel("B − A pass rate (all scores), per case over its paired trials")
    axes.grid(axis="x", alpha=0.3)
    return to_svg(figure)
