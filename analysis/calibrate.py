"""`python -m analysis.calibrate RUN`: how well each judge agreed with the hand labels.

Reads a judge calibration run (`results/<run>/judge_calibration.jsonl`, written by
`evals/eval_judge_calibration.py`) and prints, per judge model and template version: exact
agreement, Cohen's kappa unweighted and weighted by score distance (each with a bootstrap 95%
interval over examples), the mean score distance, agreement per trap, and the confusion matrix.
A judge is trusted when its weighted kappa is at least TRUST_KAPPA and it never failed to answer;
`--min-kappa` makes the command exit 1 when a judge falls short (what `make calibrate` uses).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from analysis.agreement import Agreement, measure
from analysis.calibration_records import CalibrationRunError, VerdictRecord, load_verdicts, resolve_run
from scorers.judge_template import CHOICES, TemplateError, load_template

TRUST_KAPPA = 0.8


def _scores_for(info: dict[str, Any], template_ref: str) -> dict[str, float]:
    """The choice scores a template version used (recorded in calibration.json), else the bundled ones."""
    recorded = (info.get("templates") or {}).get(template_ref)
    if isinstance(recorded, dict) and sorted(recorded) == list(CHOICES):
        return {choice: float(value) for choice, value in recorded.items()}
    return dict(load_template().choice_scores)


def group(records: list[VerdictRecord]) -> dict[tuple[str, str], list[VerdictRecord]]:
    """Verdicts per (judge model, template version), in a stable order."""
    groups: dict[tuple[str, str], list[VerdictRecord]] = defaultdict(list)
    for record in records:
        groups[(record.judge_model, record.judge_template)].append(record)
    return dict(sorted(groups.items()))


def per_trap(records: list[VerdictRecord]) -> dict[str, tuple[int, int]]:
    """(exact choices, judged) per trap, for the traps that occur."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        if record.choice is None:
            continue
        for trap in record.traps:
            counts[trap][0] += record.choice == record.label
            counts[trap][1] += 1
    return {trap: (hits, total) for trap, (hits, total) in sorted(counts.items())}


def trusted(agreement: Agreement, min_kappa: float = TRUST_KAPPA) -> bool:
    """The suite's rule: weighted kappa >= min_kappa and no failed judge calls."""
    return (
        agreement.judge_errors == 0 and agreement.weighted_kappa is not None and agreement.weighted_kappa >= min_kappa
    )


def calibrate(run_dir: Path, resamples: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """One report per judge model and template version."""
    info, records = load_verdicts(run_dir)
    reports: list[dict[str, Any]] = []
    for (model, template_ref), verdicts in group(records).items():
        pairs = [(record.label, record.choice) for record in verdicts if record.choice is not None]
        errors = [record for record in verdicts if record.choice is None]
        unknown = sorted({choice for _, choice in pairs if choice not in CHOICES})
        if unknown:
            raise CalibrationRunError(f"{run_dir}: judge {model} answered unknown choices {', '.join(unknown)}")
        scores = _scores_for(info, template_ref)
        agreement = measure(pairs, CHOICES, scores, judge_errors=len(errors), resamples=resamples, seed=seed)
        reports.append(
            {
                "judge_model": model,
                "judge_template": template_ref,
                "choice_scores": scores,
                "agreement": agreement,
                "traps": per_trap(verdicts),
                "first_judge_error": errors[0].error if errors else None,
            }
        )
    return reports


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval(bounds: tuple[float, float] | None) -> str:
    return "" if bounds is None else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def render(report: dict[str, Any], min_kappa: float = TRUST_KAPPA) -> str:
    """One judge's block of text: the numbers, the verdict, the confusion matrix."""
    agreement: Agreement = report["agreement"]
    percent = "n/a" if agreement.agreement is None else f"{100 * agreement.agreement:.1f}%"
    lines = [
        f"== judge {report['judge_model']} · template {report['judge_template']} · "
        f"{agreement.examples} judged, {agreement.judge_errors} judge error(s)",
        f"   agreement (exact choice)        {percent}",
        f"   Cohen's kappa, unweighted       {_number(agreement.kappa)}  {_interval(agreement.kappa_interval)}",
        f"   kappa, score-distance weights   {_number(agreement.weighted_kappa)}  "
        f"{_interval(agreement.weighted_interval)}",
        f"   mean score distance             {_number(agreement.mean_score_distance)}",
    ]
    if report["traps"]:
        traps = ", ".join(f"{trap} {hits}/{total}" for trap, (hits, total) in report["traps"].items())
        lines.append(f"   exact choice per trap           {traps}")
    if report["first_judge_error"]:
        lines.append(f"   first judge error: {report['first_judge_error']}")
    verdict = "TRUSTED" if trusted(agreement, min_kappa) else "NOT TRUSTED"
    lines.append(f"   verdict: {verdict} (needs weighted kappa >= {min_kappa:g} and no judge errors)")
    lines.append("   confusion (rows: label, columns: judge's choice)")
    lines.append("        " + "".join(f"{choice:>5}" for choice in CHOICES))
    for choice, row in zip(CHOICES, agreement.confusion, strict=True):
        lines.append(f"     {choice}  " + "".join(f"{count:>5}" for count in row))
    return "\n".join(lines)


def as_json(report: dict[str, Any], min_kappa: float = TRUST_KAPPA) -> dict[str, Any]:
    return {
        **{key: value for key, value in report.items() if key != "agreement"},
        **asdict(report["agreement"]),
        "traps": {trap: {"exact": hits, "judged": total} for trap, (hits, total) in report["traps"].items()},
        "trusted": trusted(report["agreement"], min_kappa),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a run folder, its judge_calibration.jsonl, or a run id under results/")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument(
        "--min-kappa",
        type=float,
        default=None,
        help=f"exit 1 unless every judge is trusted at this kappa (e.g. {TRUST_KAPPA})",
    )
    args = parser.parse_args(argv)
    threshold = TRUST_KAPPA if args.min_kappa is None else args.min_kappa
    try:
        run_dir = resolve_run(args.run)
        reports = calibrate(run_dir, resamples=args.bootstrap, seed=args.seed)
    except (CalibrationRunError, TemplateError) as error:
        print(f"calibrate: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"run": str(run_dir), "judges": [as_json(report, threshold) for report in reports]}))
    else:
        print(f"judge calibration run {run_dir}")
        print("\n\n".join(render(report, threshold) for report in reports))
    if args.min_kappa is not None and not all(trusted(report["agreement"], threshold) for report in reports):
        print(f"calibrate: a judge is not trusted at weighted kappa >= {threshold:g}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
