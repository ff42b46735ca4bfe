"""`python -m analysis.calibrate RUN`: how well each judge agreed with the hand labels.

Reads a judge calibration run (`results/<run>/judge_calibration.jsonl`, written by
`evals/eval_judge_calibration.py`) and prints, per judge model and template version: exact
agreement, Cohen's kappa unweighted and weighted by score distance (each with a bootstrap 95%
interval over examples), the mean score distance, its false alarms (answers labelled with a
passing choice that it fails) and misses (labelled failing, passed), each with a Wilson 95% interval
and the examples behind it, its self-agreement over the repeats (the same choice on every repeat, and
Fleiss' kappa between repeats), agreement per trap, and the confusion matrix. Agreement with the
labels reads each example's first judgement, the one a trial's score is. A judge is trusted when
its weighted kappa is at least TRUST_KAPPA and it never failed to answer; `--min-kappa` makes the
command exit 1 when a judge falls short (what `make calibrate` uses).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from analysis.agreement import Agreement, ErrorRate, SelfAgreement, error_rates, measure, measure_self, passes
from analysis.calibration_records import CalibrationRunError, VerdictRecord, load_verdicts, resolve_run
from analysis.summary import PASS_THRESHOLD
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


def judge_report(
    model: str,
    template_ref: str,
    scores: dict[str, float],
    verdicts: list[VerdictRecord],
    resamples: int = 2000,
    seed: int = 0,
    where: str = "",
) -> dict[str, Any]:
    """One judge's report: agreement with the labels, its false alarms and misses, its self-agreement.

    Agreement with the labels, the error rates and the traps read each example's first judgement
    (repeat 1), the one judgement a trial's score is; the repeats measure only how far the judge
    agrees with itself. Every failed call, on any repeat, is a judge error.
    """
    prefix = f"{where}: " if where else ""
    # Verdicts are written as judgements finish, in no fixed order: sorted, the seeded bootstrap gives the
    # same intervals for the same verdicts.
    verdicts = sorted(verdicts, key=lambda record: (record.example_id, record.repeat))
    seen: set[tuple[str, int]] = set()
    for record in verdicts:
        key = (record.example_id, record.repeat)
        if key in seen:
            raise CalibrationRunError(
                f"{prefix}judge {model} judged example {record.example_id} twice as repeat {record.repeat} "
                "(two calibrations wrote to one run folder? give each its own EVAL_RUN_ID)"
            )
        seen.add(key)
    unknown = sorted({record.choice for record in verdicts if record.choice is not None} - set(CHOICES))
    if unknown:
        raise CalibrationRunError(f"{prefix}judge {model} answered unknown choices {', '.join(unknown)}")
    errors = [record for record in verdicts if record.choice is None]
    first = [record for record in verdicts if record.repeat == 1]
    answered = [record for record in first if record.choice is not None]
    pairs = [(record.label, str(record.choice)) for record in answered]
    agreement = measure(pairs, CHOICES, scores, judge_errors=len(errors), resamples=resamples, seed=seed)
    false_alarms, misses = error_rates([(r.example_id, r.label, str(r.choice)) for r in answered], scores)
    repeats = max((record.repeat for record in verdicts), default=1)
    per_repeat: list[float | None] = []
    for repeat in range(1, repeats + 1):
        judged = [record for record in verdicts if record.repeat == repeat and record.choice is not None]
        per_repeat.append(sum(r.choice == r.label for r in judged) / len(judged) if judged else None)
    self_agreement = None
    if repeats >= 2:
        choices: dict[str, list[str | None]] = defaultdict(lambda: [None] * repeats)
        for record in sorted(verdicts, key=lambda item: (item.example_id, item.repeat)):
            choices[record.example_id][record.repeat - 1] = record.choice
        cache_hits = sum(record.cache_hit for record in verdicts)
        self_agreement = measure_self(choices, CHOICES, scores, repeats, cache_hits, resamples, seed)
    return {
        "judge_model": model,
        "judge_template": template_ref,
        "choice_scores": scores,
        "agreement": agreement,
        "repeats": repeats,
        "agreement_per_repeat": per_repeat,
        "false_alarms": false_alarms,
        "misses": misses,
        "self_agreement": self_agreement,
        "traps": per_trap(first),
        "first_judge_error": errors[0].error if errors else None,
    }


def calibrate(run_dir: Path, resamples: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """One report per judge model and template version."""
    info, records = load_verdicts(run_dir)
    return [
        judge_report(model, ref, _scores_for(info, ref), verdicts, resamples, seed, where=str(run_dir))
        for (model, ref), verdicts in group(records).items()
    ]


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval(bounds: tuple[float, float] | None) -> str:
    return "" if bounds is None else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _percent_interval(bounds: tuple[float, float] | None) -> str:
    return "" if bounds is None else f"[{100 * bounds[0]:.1f}%, {100 * bounds[1]:.1f}%]"


def _line(label: str, value: str) -> str:
    return f"   {label:<32}{value}".rstrip()


def _error_line(label: str, rate: ErrorRate) -> str:
    if not rate.of:
        return _line(label, "n/a (no such labelled answer judged)")
    behind = f"  {', '.join(rate.examples)}" if rate.examples else ""
    share = f"{rate.errors} of {rate.of} = {_percent(rate.rate)}"
    return _line(label, f"{share}  {_percent_interval(rate.interval)}{behind}")


def pass_rule(scores: dict[str, float]) -> str:
    """Which labels count as right answers and which as wrong, in words."""
    right = [choice for choice in CHOICES if passes(choice, scores)]
    wrong = [choice for choice in CHOICES if not passes(choice, scores)]
    return f"labels {', '.join(right)} pass (score >= {PASS_THRESHOLD:g}), {', '.join(wrong)} fail"


def self_agreement_lines(found: SelfAgreement) -> list[str]:
    """The self-agreement block: same choice, same score and pass/fail, Fleiss' kappa, what changed."""
    lines = [
        _line(
            f"self-agreement, {found.repeats} repeats",
            f"same choice {found.same_choice} of {found.examples} = {_percent(found.same_choice_share)}  "
            f"{_percent_interval(found.same_choice_interval)}",
        ),
        _line(
            "",
            f"same score {found.same_score} of {found.examples} = {_percent(found.same_score_share)}, "
            f"same pass/fail {found.same_verdict} of {found.examples} = {_percent(found.same_verdict_share)}",
        ),
        _line("kappa between repeats (Fleiss)", f"{_number(found.kappa)}  {_interval(found.kappa_interval)}"),
    ]
    if found.differing:
        changed = ", ".join(f"{example} {'→'.join(choices)}" for example, choices in found.differing.items())
        lines.append(_line("choices that changed", changed))
    if found.incomplete:
        lines.append(_line("", f"{found.incomplete} left out: a repeat failed or is missing"))
    if found.cache_hits:
        lines.append(
            _line(
                "WARNING",
                f"{found.cache_hits} judgement(s) came from a cache on the judge's route, not the model: "
                "self-agreement overstates",
            )
        )
    return lines


def _self_lines(report: dict[str, Any]) -> list[str]:
    found: SelfAgreement | None = report["self_agreement"]
    if found is None:
        return [_line("self-agreement", "n/a (each example judged once)")]
    lines = self_agreement_lines(found)
    shares = ", ".join(_percent(share) for share in report["agreement_per_repeat"])
    per_repeat = _line("exact choice per repeat", shares)
    return [*lines[:3], per_repeat, *lines[3:]]


def render(report: dict[str, Any], min_kappa: float = TRUST_KAPPA) -> str:
    """One judge's block of text: the numbers, the verdict, the confusion matrix."""
    agreement: Agreement = report["agreement"]
    lines = [
        f"== judge {report['judge_model']} · template {report['judge_template']} · "
        f"{agreement.examples} judged, {agreement.judge_errors} judge error(s)",
        _line("agreement (exact choice)", _percent(agreement.agreement)),
        _line("Cohen's kappa, unweighted", f"{_number(agreement.kappa)}  {_interval(agreement.kappa_interval)}"),
        _line(
            "kappa, score-distance weights",
            f"{_number(agreement.weighted_kappa)}  {_interval(agreement.weighted_interval)}",
        ),
        _line("mean score distance", _number(agreement.mean_score_distance)),
        _line("right and wrong answers", pass_rule(report["choice_scores"])),
        _error_line("false alarms (right, failed)", report["false_alarms"]),
        _error_line("misses (wrong, passed)", report["misses"]),
        *_self_lines(report),
    ]
    if report["traps"]:
        traps = ", ".join(f"{trap} {hits}/{total}" for trap, (hits, total) in report["traps"].items())
        lines.append(_line("exact choice per trap", traps))
    if report["first_judge_error"]:
        lines.append(f"   first judge error: {report['first_judge_error']}")
    verdict = "TRUSTED" if trusted(agreement, min_kappa) else "NOT TRUSTED"
    lines.append(f"   verdict: {verdict} (needs weighted kappa >= {min_kappa:g} and no judge errors)")
    lines.append("   confusion (rows: label, columns: judge's choice; first judgements)")
    lines.append("        " + "".join(f"{choice:>5}" for choice in CHOICES))
    for choice, row in zip(CHOICES, agreement.confusion, strict=True):
        lines.append(f"     {choice}  " + "".join(f"{count:>5}" for count in row))
    return "\n".join(lines)


def as_json(report: dict[str, Any], min_kappa: float = TRUST_KAPPA) -> dict[str, Any]:
    structured = ("agreement", "false_alarms", "misses", "self_agreement")
    found = report["self_agreement"]
    return {
        **{key: value for key, value in report.items() if key not in structured},
        **asdict(report["agreement"]),
        "false_alarms": asdict(report["false_alarms"]),
        "misses": asdict(report["misses"]),
        "self_agreement": None if found is None else asdict(found),
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
