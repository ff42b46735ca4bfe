"""The HTML page of an A/B run: what each arm ran, verdicts, the paired difference per case as a
picture, the cases that moved, and how many trials each case got and why it stopped.

Each arm is named from its records (model, server, tool descriptions, decoys, tools, system prompt),
not from the label it was started with: a two-model A/B is not "default vs default", and a variant
A/B still says which model read the variants. The title names what differs; a table names it all.
A server-design A/B (`make ab A=server:local B=server:dbhub`) names each arm's server by what ran
(`localneon, the Neon twin` or the npm package and version) and its family, whose tools it judged.

    python -m analysis.ab_page RUN_A RUN_B [--out FILE] [--dataset PATH]

`evals.ab` (`make ab`) writes it after `analysis.compare`; it can be rebuilt from the two run folders.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from analysis import compare as compare_cli
from analysis.charts import Rate, paired_differences
from analysis.pages import render_page
from analysis.passing import trial_passed
from analysis.summary import percent
from harness.cases import Case, DatasetError, load_cases
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import load_run

OVERALL = "all_scores"


def case_rates(
    records_a: Sequence[TrialRecord], records_b: Sequence[TrialRecord], cases: dict[str, Case], names: tuple[str, str]
) -> list[tuple[str, Rate, Rate]]:
    """Per case, A's and B's passes over the trials both arms ran and could judge (paired by index)."""
    outcomes: dict[str, dict[str, dict[int, bool | None]]] = {"A": defaultdict(dict), "B": defaultdict(dict)}
    for arm, name, records in (("A", names[0], records_a), ("B", names[1], records_b)):
        for record in records:
            case = cases.get(record.case_id)
            if case is None:
                raise DatasetError(f"{name}: case {record.case_id!r} is not in the dataset")
            outcomes[arm][record.case_id][record.trial_index] = trial_passed(record, case)
    rows: list[tuple[str, Rate, Rate]] = []
    for case_id in sorted(set(outcomes["A"]) & set(outcomes["B"])):
        a, b = outcomes["A"][case_id], outcomes["B"][case_id]
        both = [i for i in a if i in b and a[i] is not None and b[i] is not None]
        if both:
            rows.append(
                (case_id, Rate(sum(1 for i in both if a[i]), len(both)), Rate(sum(1 for i in both if b[i]), len(both)))
            )
    return rows


def _prompt(prompt: str | None) -> str:
    if not prompt:
        return "default"
    first = " ".join(prompt.split())
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:8]
    return f"“{first[:40]}{'…' if len(first) > 40 else ''}” ({len(prompt)} chars, {digest})"


def server_name(config: TrialConfig) -> str:
    """The server a trial ran on, as a reader knows it, with the family whose tools it had."""
    name = "localneon, the Neon twin" if config.server == "local" else config.server_identity or config.server
    return f"{name} ({config.server_family} family)"


# What names an arm, read from its records' configs, in the order the page says it.
ARM_FIELDS: tuple[tuple[str, Callable[[TrialConfig], object]], ...] = (
    ("model", lambda c: c.model),
    ("server", server_name),
    ("descriptions", lambda c: c.description_variant),
    ("surface", lambda c: c.surface or "not recorded"),  # a variant applies on top of the surface worn
    ("decoys", lambda c: c.decoy_count),
    ("tools", lambda c: c.tool_count),
    ("system prompt", lambda c: _prompt(c.system_prompt)),
)


def arm_values(records: Sequence[TrialRecord]) -> dict[str, str]:
    """Every field that names an arm, as its records hold it (a run of several values lists them all)."""
    values = {}
    for field, get in ARM_FIELDS:
        seen = sorted({get(record.config) for record in records}, key=lambda v: (isinstance(v, str), v))
        values[field] = ", ".join(str(value) for value in seen) or "?"
    return values


def arm_titles(a: dict[str, str], b: dict[str, str]) -> tuple[str, str, str]:
    """(A's name, B's name, what both share) for the title: the fields that differ name the arms."""
    differ = [field for field, _ in ARM_FIELDS if a[field] != b[field]]

    def name(values: dict[str, str]) -> str:
        return " · ".join(values[f] if f in ("model", "descriptions") else f"{f} {values[f]}" for f in differ)

    shared = ", ".join(f"{f} {a[f]}" for f, _ in ARM_FIELDS if f not in differ)
    return name(a), name(b), shared


def _stops(run_a: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = run_a / "adaptive.json"
    if not path.is_file():
        return [], {}
    rows: list[dict[str, Any]] = []
    settings: dict[str, Any] = {}
    for summary in json.loads(path.read_text(encoding="utf-8")).values():
        settings = summary
        for case_id, state in sorted(summary.get("cases", {}).items()):
            passed = state.get("passed") if isinstance(state.get("passed"), dict) else {}
            rows.append(
                {
                    "case_id": case_id,
                    "trials": state.get("trials"),
                    "a": passed.get("A", ""),
                    "b": passed.get("B", ""),
                    "stopped": state.get("stopped"),
                }
            )
    return rows, settings


def _compared(path: Path, group: dict[str, Any]) -> list[TrialRecord]:
    """The records `analysis.compare` compared for one arm: its model's, when the run holds several."""
    records = load_run(path)[1]
    model = group.get("model")
    return [record for record in records if record.config.model == model] or records


def _run_votes(votes: Any) -> str | None:
    """The rounds' own verdict over the cases that stopped (one vote per case), in words."""
    if not isinstance(votes, dict) or "verdict" not in votes:
        return None
    text = (
        f"{votes['verdict']} ({votes.get('b_better', 0)} cases favour B, {votes.get('a_better', 0)} favour A, "
        f"{votes.get('tied', 0)} tied"
    )
    return text + (f"; {votes['open']} still open)" if votes.get("open") else ")")


def _css(verdict: str) -> str:
    return "better" if verdict == "B better" else "worse" if verdict == "B worse" else ""


def write(run_a: Path, run_b: Path, comparison: dict[str, Any], out: Path, dataset: str | None = None) -> Path:
    """Render the page from `analysis.compare --json` output and the two runs; returns its path."""
    scores = []
    for name, s in comparison["scores"].items():
        scores.append(
            {
                "name": name,
                "pairs": s["pairs"],
                "a": percent(s["a"].get("rate")),
                "b": percent(s["b"].get("rate")),
                "difference": percent(s.get("difference"), True),
                "bootstrap": "n/a"
                if not s.get("bootstrap")
                else f"[{percent(s['bootstrap']['low'], True)}, {percent(s['bootstrap']['high'], True)}]",
                "votes": f"{s['cases_a_better']} / {s['cases_b_better']} / {s['cases_tied']}",
                "cases": s["cases"],
                "p": f"{s['p_value']:.4g}",
                "verdict": s["verdict"],
                "css": _css(s["verdict"]),
            }
        )
    overall = comparison["scores"].get(OVERALL, {}).get("verdict", "n/a")
    moved = []
    for direction, css in (("improved", "better"), ("regressed", "worse")):
        for change in comparison["scores"].get(OVERALL, {}).get(direction, []):
            moved.append(
                {
                    "case_id": change["case_id"],
                    "a": f"{change['a_passed']}/{change['trials']}",
                    "b": f"{change['b_passed']}/{change['trials']}",
                    "direction": direction,
                    "css": css,
                }
            )
    stops, adaptive = _stops(run_a)
    records = {arm: _compared(path, comparison[arm.lower()]) for arm, path in (("A", run_a), ("B", run_b))}
    values = {arm: arm_values(arm_records) for arm, arm_records in records.items()}
    name_a, name_b, shared = arm_titles(values["A"], values["B"])
    title = f"A/B: {name_a} vs {name_b}" if name_a else f"A/B: {run_a.name} vs {run_b.name} (the same settings)"
    cases = {case.id: case for case in load_cases(dataset)}
    rates = case_rates(records["A"], records["B"], cases, (str(run_a), str(run_b)))
    arms = [
        {
            "arm": arm,
            "config": values[arm],
            "run": path.name,
            "trials": comparison[arm.lower()].get("trials"),
        }
        for arm, path in (("A", run_a), ("B", run_b))
    ]
    server_design = values["A"]["server"] != values["B"]["server"]
    html = render_page(
        "ab.html",
        title=title,
        shared=shared,
        servers={arm: values[arm]["server"] for arm in ("A", "B")} if server_design else None,
        arms=arms,
        fields=[field for field, _ in ARM_FIELDS],
        differ=[field for field, _ in ARM_FIELDS if values["A"][field] != values["B"][field]],
        names={"A": name_a or run_a.name, "B": name_b or run_b.name},
        paired=comparison.get("paired"),
        paired_cases=comparison.get("paired_cases"),
        overall=overall,
        overall_class=_css(overall),
        scores=scores,
        alpha=comparison.get("alpha"),
        differences_svg=paired_differences(rates) if rates else None,
        moved=moved,
        stops=stops,
        adaptive_alpha=adaptive.get("alpha"),
        adaptive_margin=adaptive.get("margin"),
        run_votes=_run_votes(adaptive.get("votes")),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.ab_page", description=__doc__.split("\n")[0])
    parser.add_argument("run_a", metavar="RUN_A")
    parser.add_argument("run_b", metavar="RUN_B")
    parser.add_argument("--out", help="the page (default: beside RUN_B, <run>-ab.html)")
    parser.add_argument("--dataset", help="case file or folder (default: EVAL_DATASET, then the bundled cases)")
    args = parser.parse_args(argv)
    run_a, run_b = Path(args.run_a), Path(args.run_b)
    compare_args = [str(run_a), str(run_b), "--json", *(["--dataset", args.dataset] if args.dataset else [])]
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        code = compare_cli.main(compare_args)
    if code != 0:
        return code
    out = Path(args.out) if args.out else run_b.parent / f"{run_b.name}-ab.html"
    try:
        page = write(run_a, run_b, json.loads(captured.getvalue()), out, args.dataset)
    except DatasetError as error:
        print(f"ab_page: error: {error}", file=sys.stderr)
        return 2
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
