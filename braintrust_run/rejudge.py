"""`python -m braintrust_run.rejudge RUN`: the factuality judge's self-agreement on a run's own answers.

The calibration measures the judge on hand-labelled answers; this measures it on the answers a run
actually produced. Every trial that ended with a final answer is judged `--repeats` times (default
2) by the configured judge, with the production template, one fresh request after the other past
any response cache (`scorers.factuality.classify_repeatedly`), exactly as `factuality` would judge
it. Trials without a final answer are not judged (factuality scores them 0 or n/a without a judge).

Every judgement goes to `<run>/judge_repeats.jsonl` (rewritten on each call), and the command prints
how often the judge agreed with itself: the same choice, the same score and the same pass/fail on
every repeat, and Fleiss' kappa between repeats. A trial whose pass/fail flipped is one whose
factuality verdict was chance. Exit 0, 1 when any judgement failed, 2 when nothing could be judged
(no judge, a bad run, a case that changed since the run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from analysis.agreement import measure_self
from analysis.calibrate import self_agreement_lines
from analysis.rescore import check_cases, refuse_changed_cases
from analysis.runs import RunInputError, load_records, run_folder
from braintrust_run.settings import launch_environment
from harness.cases import Case, DatasetError, load_cases
from harness.recording.records import TrialRecord
from scorers.factuality import Verdict, classify_repeatedly, conversation_text
from scorers.judge_client import JudgePreflightError, JudgeSettings, judge_settings, no_judge_reason, preflight
from scorers.judge_template import CHOICES, JudgeTemplate, TemplateError, load_template, template_path
from scorers.registry import spec
from scorers.versions import VersionError

REPO_ROOT = Path(__file__).resolve().parent.parent
REPEATS_FILE = "judge_repeats.jsonl"
DEFAULT_REPEATS = 2
MAX_REPEATS = 10


@dataclass(frozen=True)
class Judgement:
    """One repeat of one trial's judgement, as kept in `judge_repeats.jsonl`."""

    trial: str  # the trial's key in the report: case#index (with model and variant when the run has several)
    case_id: str
    trial_index: int
    model: str
    repeat: int
    choice: str | None
    score: float | None
    error: str | None
    cache_hit: bool
    judge_model: str
    judge_template: str
    judge_version: str  # factuality's version (its code and the template's bytes, `scorers.versions`)


def answered(records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The trials factuality asks the judge about: they ended normally with a final answer."""
    return [record for record in records if record.outcome == "ok" and record.final_answer.strip()]


def trial_keys(records: Sequence[TrialRecord]) -> list[str]:
    """A name per trial, unique in the run: `case#index`, with the model and the description variant
    when the run holds several, and the start time when that is still not enough."""
    models = len({record.config.model for record in records}) > 1
    variants = len({record.config.description_variant for record in records}) > 1
    keys = [
        " ".join(
            [f"{record.case_id}#{record.trial_index}"]
            + ([record.config.model] if models else [])
            + ([record.config.description_variant] if variants else [])
        )
        for record in records
    ]
    counts = Counter(keys)
    return [
        key if counts[key] == 1 else f"{key} @{record.started_at}" for key, record in zip(keys, records, strict=True)
    ]


async def judge_trials(
    records: Sequence[TrialRecord],
    cases: dict[str, Case],
    settings: JudgeSettings,
    template: JudgeTemplate,
    repeats: int,
    concurrency: int,
) -> list[list[Verdict]]:
    """Every trial's verdicts, repeat by repeat; `concurrency` trials at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def judge(record: TrialRecord) -> list[Verdict]:
        case = cases[record.case_id]
        expected = case.render(case.expected_answer, record.project_id) if record.project_id else case.expected_answer
        async with gate:
            return await classify_repeatedly(
                conversation_text(record), expected, record.final_answer, settings, template, repeats
            )

    return list(await asyncio.gather(*(judge(record) for record in records)))


def write_judgements(path: Path, judgements: Sequence[Judgement]) -> None:
    """The file whole or not at all: a temporary file, then a rename."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("".join(json.dumps(asdict(item)) + "\n" for item in judgements), encoding="utf-8")
    os.replace(temporary, path)


def _repeats(text: str) -> int:
    if not text.isdigit() or not 2 <= int(text) <= MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 2 to {MAX_REPEATS}")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m braintrust_run.rejudge", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a run folder, its trials.jsonl, or a run id under results/")
    parser.add_argument("--repeats", type=_repeats, default=DEFAULT_REPEATS, help="judgements per answer (default 2)")
    parser.add_argument("--dataset", default=None, help="the cases the run ran (default: the bundled ones)")
    parser.add_argument("--concurrency", type=_positive, default=4, help="trials judged at once (default 4)")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args(argv)
    env = launch_environment(REPO_ROOT / ".env")
    settings = judge_settings(env)
    if settings is None:
        print(f"rejudge: {no_judge_reason(env)}", file=sys.stderr)
        return 2
    try:
        path, _, records = load_records(args.run)
        cases = {case.id: case for case in load_cases(args.dataset)}
        check_cases(records, cases)
        refuse_changed_cases(records, cases)
        template = load_template(template_path(env))
        version = spec("factuality").version(env)
        preflight(env)
    except (RunInputError, DatasetError, TemplateError, JudgePreflightError, VersionError) as error:
        print(f"rejudge: {error}", file=sys.stderr)
        return 2
    chosen = answered(records)
    if not chosen:
        print(f"rejudge: {path}: no trial ended with a final answer, so there is nothing to judge", file=sys.stderr)
        return 2
    keys = trial_keys(chosen)
    verdicts = asyncio.run(judge_trials(chosen, cases, settings, template, args.repeats, args.concurrency))
    judgements = [
        Judgement(
            trial=key,
            case_id=record.case_id,
            trial_index=record.trial_index,
            model=record.config.model,
            repeat=repeat,
            choice=verdict.choice,
            score=verdict.score,
            error=verdict.error,
            cache_hit=verdict.cache_hit,
            judge_model=settings.model,
            judge_template=template.ref,
            judge_version=version,
        )
        for key, record, repeats in zip(keys, chosen, verdicts, strict=True)
        for repeat, verdict in enumerate(repeats, start=1)
    ]
    kept = run_folder(path) / REPEATS_FILE
    write_judgements(kept, judgements)
    by_trial = {key: [verdict.choice for verdict in repeats] for key, repeats in zip(keys, verdicts, strict=True)}
    hits = sum(item.cache_hit for item in judgements)
    found = measure_self(
        by_trial, CHOICES, template.choice_scores, args.repeats, hits, resamples=args.bootstrap, seed=args.seed
    )
    failed = [item for item in judgements if item.error]
    skipped = len(records) - len(chosen)
    if args.json:
        report = {
            "run": str(path),
            "judge_model": settings.model,
            "judge_template": template.ref,
            "judge_version": version,
            "trials": len(records),
            "judged": len(chosen),
            "not_judged": skipped,
            "judge_errors": len(failed),
            "first_judge_error": failed[0].error if failed else None,
            "self_agreement": asdict(found),
            "judgements": str(kept),
        }
        print(json.dumps(report))
    else:
        print(
            f"== judge {settings.model} · template {template.ref} (factuality {version}) · run {path} · "
            f"{len(chosen)} answers judged {args.repeats} times ({skipped} trial(s) without a final answer not judged)"
        )
        print("\n".join(self_agreement_lines(found)))
        print(f"   judge errors                    {len(failed)}" + (f", first: {failed[0].error}" if failed else ""))
        print(f"   judgements kept in {kept}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
