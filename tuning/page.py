"""What a tuning run shows a reader: the readable diff of the descriptions and the HTML page.

Why a page of its own: a tuning run's verdict is a chain of decisions (every candidate against the
incumbent of its time, on validation, then the finalist once on the untouched part), and a reader
must see each link: the paired difference with its interval, the harm bounds against their limit,
which rule refused a candidate, the confirmation, and the command that runs it all again. The page
is self-contained (inline SVG, no script), so it can be kept as a CI artifact.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuning.acceptance import Decision

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
ROW_HEIGHT = 26
PLOT_WIDTH = 520
LABEL_WIDTH = 220


@dataclass(frozen=True)
class Tried:
    """One candidate as the page shows it: its decision, what made it and what it changed."""

    number: int
    decision: Decision
    operators: tuple[str, ...]
    incumbent: str  # the name of the incumbent it was compared with
    diff: str  # the readable diff of its descriptions against that incumbent's


def description_diff(before: Mapping[str, str], after: Mapping[str, str], old: str, new: str) -> str:
    """A unified diff per tool whose description differs, one sentence a line so a change reads."""
    parts: list[str] = []
    for tool in sorted(set(before) | set(after)):
        first, second = before.get(tool, ""), after.get(tool, "")
        if first == second:
            continue
        lines = difflib.unified_diff(
            _sentence_lines(first), _sentence_lines(second), f"{old}: {tool}", f"{new}: {tool}", lineterm=""
        )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + ("\n" if parts else "")


def _sentence_lines(text: str) -> list[str]:
    """A description one sentence a line: a diff then shows which sentence moved or changed."""
    return [part for part in SENTENCE_END.split(" ".join(text.split())) if part]


def is_confirmed(decision: Decision) -> bool:
    """Confirmed on the untouched part: accepted there, and the gain's interval above zero."""
    return decision.accepted and decision.gain_interval is not None and decision.gain_interval.low > 0


def _rule_text(decision: Decision) -> str:
    verdict = "accepted" if decision.accepted else "refused by " + ", ".join(decision.refused_by)
    if decision.twin_votes is None:
        return verdict
    more, fewer = decision.twin_votes
    return f"{verdict} (twins in its words drawn on {more} more cases, {fewer} fewer)"


def _interval(decision: Decision) -> str:
    if decision.gain is None or decision.gain_interval is None:
        return "n/a"
    low, high = decision.gain_interval.low, decision.gain_interval.high
    return f"{100 * decision.gain:+.1f} pts [{100 * low:+.1f}, {100 * high:+.1f}]"


def _harms(decision: Decision) -> str:
    if not decision.harm_bounds:
        return "none measured"
    return "; ".join(
        f"{harm}: bound {100 * bound:.1f}% vs limit {100 * limit:.1f}%"
        for harm, (limit, bound) in sorted(decision.harm_bounds.items())
    )


def forest_plot(decisions: Sequence[tuple[str, Decision]]) -> str:
    """Each decision's paired gain and its 95% interval against a zero line, as inline SVG."""
    shown = [(label, d) for label, d in decisions if d.gain is not None and d.gain_interval is not None]
    if not shown:
        return "<p>No candidate had paired cases to plot.</p>"
    height = ROW_HEIGHT * (len(shown) + 1)

    def x(value: float) -> float:  # a difference in pass rate, -1..1, across the plot
        return LABEL_WIDTH + (value + 1) / 2 * PLOT_WIDTH

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_WIDTH + PLOT_WIDTH + 20}" height="{height}" '
        'role="img" aria-label="paired gain per candidate with its 95% interval">',
        f'<line x1="{x(0)}" y1="0" x2="{x(0)}" y2="{height}" stroke="#888" stroke-dasharray="4 3"/>',
    ]
    for row, (label, decision) in enumerate(shown):
        assert decision.gain is not None and decision.gain_interval is not None
        y = ROW_HEIGHT * (row + 0.5)
        colour = "#1a7f37" if decision.accepted else "#cf222e"
        low, high = decision.gain_interval.low, decision.gain_interval.high
        parts += [
            f'<text x="4" y="{y + 4}" font-size="12">{html.escape(label)}</text>',
            f'<line x1="{x(low)}" y1="{y}" x2="{x(high)}" y2="{y}" stroke="{colour}" stroke-width="3"/>',
            f'<circle cx="{x(decision.gain)}" cy="{y}" r="4" fill="{colour}"/>',
        ]
    axis = ROW_HEIGHT * (len(shown) + 0.7)
    for tick in (-1.0, -0.5, 0.0, 0.5, 1.0):
        parts.append(f'<text x="{x(tick) - 10}" y="{axis}" font-size="10">{tick:+.1f}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def render_page(
    title: str,
    facts: Mapping[str, str],
    tried: Sequence[Tried],
    confirmations: Mapping[str, Decision],
    final_diff: str,
    command: str,
    state: str,
) -> str:
    """The whole page: facts of the run, the search as a table and a plot, the confirmation, the diff."""
    rows = "\n".join(
        "<tr>"
        f"<td>{item.number}</td><td>{html.escape(item.decision.candidate)}</td>"
        f"<td>{html.escape(', '.join(item.operators))}</td><td>{html.escape(item.incumbent)}</td>"
        f"<td>{'-'.join(str(v) for v in item.decision.votes[:2])} ({item.decision.votes[2]} tied)</td>"
        f"<td>{html.escape(_interval(item.decision))}</td>"
        f"<td>{item.decision.p_value:.4f} / {item.decision.adjusted_p:.4f}</td>"
        f"<td>{html.escape(_harms(item.decision))}</td>"
        f"<td>{html.escape(_rule_text(item.decision))}</td>"
        "</tr>"
        for item in tried
    )
    facts_list = "\n".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in facts.items())
    if not confirmations:
        confirmed = "<p>No candidate was accepted, so nothing was run on the confirmation part.</p>"
    else:
        confirmed = "\n".join(
            f"<p>{html.escape(model)}: <b>{'confirmed' if is_confirmed(decision) else 'not confirmed'}</b> on the "
            f"untouched part: {html.escape(_interval(decision))}, cases {decision.votes[0]}-{decision.votes[1]} "
            f"({decision.votes[2]} tied), p {decision.p_value:.4f}; harms: "
            f"{html.escape(_harms(decision))}; {html.escape(_rule_text(decision))}.</p>"
            for model, decision in confirmations.items()
        )
    plot = forest_plot([(f"{item.number}. {item.decision.candidate}", item.decision) for item in tried])
    diff = html.escape(final_diff) if final_diff else "(the finalist is the start: nothing changed)"
    diffs = "\n".join(
        f"<details><summary>{item.number}. {html.escape(item.decision.candidate)}</summary>"
        f"<pre>{html.escape(item.diff) or '(no change)'}</pre></details>"
        for item in tried
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:80em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;font-size:13px;vertical-align:top}}pre{{background:#f6f8fa;padding:8px;
white-space:pre-wrap}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>State: <b>{html.escape(state)}</b></p>
<ul>{facts_list}</ul>
<h2>The search, on the validation part</h2>
<p>Each candidate against the incumbent of its time, paired per case (one vote a case). Gain: the mean
per-case difference in the all-scores pass rate with its 95% interval; p: one-sided sign test, then Holm
over every candidate tried; harms: each harm's upper 95% bound against the incumbent's rate plus the margin.</p>
<table><tr><th>#</th><th>candidate</th><th>operators</th><th>against</th><th>cases won-lost</th>
<th>gain [95%]</th><th>p / Holm</th><th>harm bounds</th><th>decision</th></tr>
{rows}
</table>
{plot}
<h2>Confirmation</h2>
{confirmed}
<h2>The finalist against the start</h2>
<pre>{diff}</pre>
<h2>Every candidate's change</h2>
{diffs}
<h2>Run it again</h2>
<pre>{html.escape(command)}</pre>
</body></html>
"""
