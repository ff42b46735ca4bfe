"""The HTML page of an A/B run: verdicts, the paired difference per case as a picture, the cases
that moved, and how many trials each case got and why it stopped.

    python -m analysis.ab_page RUN_A RUN_B [--out FILE] [--dataset PATH]

`evals.ab` (`make ab`) writes it after `analysis.compare`; it can be rebuilt from the two run folders.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from analysis import compare as compare_cli
from analysis.charts import Rate, paired_differences
from analysis.pages import render_page
from analysis.passing import trial_passed
from harness.cases import DatasetError, load_cases
from harness.recording.store import load_run

OVERALL = "all_scores"


def _percent(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def case_rates(run_a: Path, run_b: Path, dataset: str | None = None) -> list[tuple[str, Rate, Rate]]:
    """Per case, A's and B's passes over the trials both arms ran and could judge (paired by index)."""
    cases = {case.id: case for case in load_cases(dataset)}
    outcomes: dict[str, dict[str, dict[int, bool | None]]] = {"A": defaultdict(dict), "B": defaultdict(dict)}
    for arm, path in (("A", run_a), ("B", run_b)):
        for record in load_run(path)[1]:
            case = cases.get(record.case_id)
            if case is None:
                raise DatasetError(f"{path}: case {record.case_id!r} is not in the dataset")
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


def _label(group: dict[str, Any]) -> str:
    variants = group.get("variants")
    if isinstance(variants, list):
        variants = ", ".join(str(v) for v in variants)
    return str(variants or group.get("model") or "?")


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
                "a": _percent(s["a"].get("rate")),
                "b": _percent(s["b"].get("rate")),
                "difference": _percent(s.get("difference"), True),
                "bootstrap": "n/a"
                if not s.get("bootstrap")
                else f"[{_percent(s['bootstrap']['low'], True)}, {_percent(s['bootstrap']['high'], True)}]",
                "b_c": f"{s['a_pass_b_fail']}/{s['a_fail_b_pass']}",
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
    label = {arm: _label(comparison[arm.lower()]) for arm in "AB"}
    html = render_page(
        "ab.html",
        title=f"A/B: {label['A']} vs {label['B']}",
        a={"label": label["A"], "run": run_a.name, "trials": comparison["a"].get("trials")},
        b={"label": label["B"], "run": run_b.name, "trials": comparison["b"].get("trials")},
        paired=comparison.get("paired"),
        paired_cases=comparison.get("paired_cases"),
        overall=overall,
        overall_class=_css(overall),
        scores=scores,
        alpha=comparison.get("alpha"),
        differences_svg=paired_differences(case_rates(run_a, run_b, dataset)),
        moved=moved,
        stops=stops,
        adaptive_alpha=adaptive.get("alpha"),
        adaptive_margin=adaptive.get("margin"),
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
