"""The judge calibration Eval: the task is the factuality judge itself, the expected output the label.

Defined only when asked (`EVAL_JUDGE_CALIBRATION=1`, as `make calibrate` does), so `make eval`
neither pays for ~80 judge calls per judge model nor changes what it measures. One experiment per
judge model (`EVAL_CALIBRATION_JUDGES`, default the configured judge model) and template version,
so judges and prompt versions line up side by side in Braintrust. Every example is judged
`EVAL_CALIBRATION_REPEATS` times (default 2), one fresh request after the other at the judge's own
temperature, so the judge's self-agreement is measured beside its agreement with the labels; the
experiment's output is the first judgement (what a trial's score would be), `self_agreement` says
whether the repeats agreed. Every verdict is also written to `results/<run id>/judge_calibration.jsonl`
for `python -m analysis.calibrate`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from braintrust import EvalCase, Reporter
from braintrust.score import Score

from analysis.calibrate import as_json, judge_report, render
from analysis.calibration_records import VerdictRecord, VerdictStore
from braintrust_run.description import Experiment
from braintrust_run.experiments import braintrust_project
from braintrust_run.login import sending_logs
from braintrust_run.settings import CALIBRATION_SWITCH, CalibrationConfigError, EvalSettings, current
from harness.recording.store import git_commit
from scorers.factuality import JUDGE_TEMPERATURE, classify_repeatedly, render_conversation
from scorers.judge_client import JudgeSettings, judge_settings, no_judge_reason
from scorers.judge_examples import JudgeExample, examples_path, load_examples
from scorers.judge_template import JudgeTemplate, load_template, template_path
from scorers.registry import spec

SWITCH = CALIBRATION_SWITCH
EVAL_NAME = "judge_calibration"
__all__ = ("CalibrationConfigError", "calibration_experiments")


def _run(env: Mapping[str, str] | None) -> EvalSettings:
    return current() if env is None else EvalSettings.from_env(env)


def requested(env: Mapping[str, str] | None = None) -> bool:
    """`EVAL_JUDGE_CALIBRATION` in `env` (default: this process's settings)."""
    return _run(env).calibration_requested


def judge_models(settings: JudgeSettings, env: Mapping[str, str] | None = None) -> list[str]:
    """`EVAL_CALIBRATION_JUDGES` (comma-separated), else the configured judge model."""
    return _run(env).calibration_judges or [settings.model]


def rows(examples: list[JudgeExample]) -> list[EvalCase[dict[str, Any], str]]:
    return [
        EvalCase(
            input={
                "conversation": example.conversation,
                "expected": example.expected,
                "submission": example.submission,
            },
            expected=example.label,
            metadata={"example_id": example.id, "traps": list(example.traps), "example": example.model_dump()},
            tags=list(example.traps),
        )
        for example in examples
    ]


def make_task(
    settings: JudgeSettings, template: JudgeTemplate, store: VerdictStore, repeats: int, version: str = ""
) -> Any:
    """Judge one labelled example `repeats` times with the production prompt, and keep every verdict
    (each naming `version`, the factuality scorer's, which covers the prompt's bytes)."""

    async def task(input: dict[str, Any], hooks: Any) -> str | None:
        example = JudgeExample.model_validate(hooks.metadata["example"])
        conversation = render_conversation(example.conversation[0], example.conversation[1:])
        verdicts = await classify_repeatedly(
            conversation, example.expected, example.submission, settings, template, repeats
        )
        described = settings.describe()
        for repeat, verdict in enumerate(verdicts, start=1):
            store.append(
                VerdictRecord(
                    example_id=example.id,
                    label=example.label,
                    choice=verdict.choice,
                    repeat=repeat,
                    cache_hit=verdict.cache_hit,
                    error=verdict.error,
                    rationale=verdict.rationale,
                    traps=list(example.traps),
                    judge_model=settings.model,
                    judge_provider=described["judge_provider"],
                    judge_base_url=described["judge_base_url"],
                    judge_template=template.ref,
                    judge_version=version,
                )
            )
        first = verdicts[0]
        hooks.metadata.update(
            {
                "judge_error": next((verdict.error for verdict in verdicts if verdict.error), None),
                "rationale": first.rationale,
                "repeats": [
                    {"choice": verdict.choice, "error": verdict.error, "cache_hit": verdict.cache_hit}
                    for verdict in verdicts
                ],
            }
        )
        return first.choice

    return task


def make_scorers(template: JudgeTemplate) -> list[Any]:
    """`exact_choice` (1 when the first judgement chose the label), `score_distance` (1 − |score gap|)
    and `self_agreement` (1 when every repeat chose the same, None when a repeat failed)."""

    def exact_choice(output: str | None = None, expected: str | None = None, **_: Any) -> Score:
        if output is None:
            return Score(name="exact_choice", score=None, metadata={"reason": "the judge gave no choice"})
        return Score(name="exact_choice", score=1.0 if output == expected else 0.0)

    def score_distance(output: str | None = None, expected: str | None = None, **_: Any) -> Score:
        scores = template.choice_scores
        if output is None or output not in scores or expected not in scores:
            return Score(name="score_distance", score=None, metadata={"reason": "the judge gave no known choice"})
        gap = abs(scores[output] - scores[expected])
        return Score(name="score_distance", score=1.0 - gap, metadata={"distance": gap})

    def self_agreement(metadata: dict[str, Any] | None = None, **_: Any) -> Score:
        choices = [repeat.get("choice") for repeat in (metadata or {}).get("repeats") or []]
        if len(choices) < 2 or any(choice is None for choice in choices):
            return Score(name="self_agreement", score=None, metadata={"reason": "a repeat gave no choice"})
        return Score(name="self_agreement", score=1.0 if len(set(choices)) == 1 else 0.0, metadata={"choices": choices})

    return [exact_choice, score_distance, self_agreement]


def verdicts_of(result: Any, metadata: Mapping[str, Any]) -> list[VerdictRecord]:
    """The verdicts of one experiment's results, every repeat, as `analysis.calibrate` reads them from disk."""
    verdicts: list[VerdictRecord] = []
    for item in result.results:
        row = item.metadata or {}
        repeats = row.get("repeats") or [{"choice": item.output, "error": str(item.error) if item.error else None}]
        for number, repeat in enumerate(repeats, start=1):
            verdicts.append(
                VerdictRecord(
                    example_id=str(row.get("example_id")),
                    label=str(item.expected),
                    choice=repeat.get("choice"),
                    repeat=number,
                    cache_hit=bool(repeat.get("cache_hit")),
                    error=repeat.get("error") or (None if repeat.get("choice") else "the task failed"),
                    traps=list(row.get("traps") or []),
                    judge_model=str(metadata.get("judge_model")),
                    judge_template=str(metadata.get("judge_template")),
                )
            )
    return verdicts


def report_eval(evaluator: Any, result: Any, verbose: bool, jsonl: bool) -> dict[str, Any]:
    """Braintrust's summary, then the agreement numbers of this judge (as `analysis.calibrate` prints them)."""
    metadata = dict(evaluator.metadata or {})
    verdicts = verdicts_of(result, metadata)
    scores = metadata.get("choice_scores") or {}
    report = (
        judge_report(str(metadata.get("judge_model")), str(metadata.get("judge_template")), scores, verdicts)
        if scores and verdicts
        else None
    )
    failed = [verdict for verdict in verdicts if verdict.choice is None]
    title = evaluator.experiment_name or evaluator.eval_name
    if report is not None:
        if jsonl:
            print(json.dumps({"calibration": title, "metadata": metadata, **as_json(report)}, default=str))
        else:
            print(str(result.summary))
            print(render(report))
    print(f"   verdicts kept in {metadata.get('results')}", file=sys.stderr)
    return {
        "title": title,
        "examples": len(result.results),
        "judgements": len(verdicts),
        "judge_errors": len(failed),
        "first_error": failed[0].error if failed else None,
    }


def report_run(reports: list[dict[str, Any]], verbose: bool, jsonl: bool) -> bool:
    """Fail the run when a judge failed on any judgement: a kappa over a silently shrunk set misleads."""
    ok = True
    for report in reports:
        if not report["examples"]:
            print(f"FAIL {report['title']}: no examples were judged", file=sys.stderr)
            ok = False
        elif report["judge_errors"]:
            print(
                f"FAIL {report['title']}: the judge failed on {report['judge_errors']} of {report['judgements']} "
                f"judgements ({report['examples']} examples), first: {report['first_error']}",
                file=sys.stderr,
            )
            ok = False
    return ok


REPORTER = Reporter("judge-calibration", report_eval=report_eval, report_run=report_run)


def run_folder() -> Path:
    """`EVAL_RESULTS_DIR/EVAL_RUN_ID` (a new id when unset, the same for every experiment of this
    process), as the trial store uses them."""
    run = current()
    return run.results_dir / run.calibration_run_id


def calibration_experiments() -> list[Experiment]:
    """One experiment per judge model, when `EVAL_JUDGE_CALIBRATION` asks for them (else none)."""
    if not requested():
        return []
    settings = judge_settings()
    if settings is None:
        raise CalibrationConfigError(f"{SWITCH} is set but {no_judge_reason()}")
    template = load_template(template_path())
    version = spec("factuality").version()  # the template in use is part of it
    examples = load_examples(examples_path())
    store = VerdictStore(run_folder())
    models = judge_models(settings)
    repeats = current().calibration_repeats
    store.write_info(
        {
            "kind": "judge_calibration",
            "git_commit": git_commit(),
            "dataset": str(examples_path()),
            "examples": len(examples),
            "repeats": repeats,
            "judge_temperature": JUDGE_TEMPERATURE,
            "judge_models": models,
            "judge_route": {key: value for key, value in settings.describe().items() if key != "judge_model"},
            "templates": {template.ref: template.choice_scores},
            "judge_version": version,
        }
    )
    project = braintrust_project()
    concurrency = current().calibration_concurrency
    made: list[Experiment] = []
    for model in models:
        judge = dataclasses.replace(settings, model=model)
        metadata = {
            "eval": EVAL_NAME,
            **judge.describe(),
            "judge_template": template.ref,
            "judge_version": version,
            "choice_scores": template.choice_scores,
            "dataset": str(examples_path()),
            "examples": len(examples),
            "repeats": repeats,
            "judge_temperature": JUDGE_TEMPERATURE,
            "git_commit": git_commit(),
            "run_id": store.run_dir.name,
            "results": str(store.run_dir),
        }
        made.append(
            Experiment(
                project=project,
                name=f"{EVAL_NAME} · {model} · {template.ref}",
                data=rows(examples),
                task=make_task(judge, template, store, repeats, version),
                scores=make_scorers(template),
                metadata=metadata,
                tags=[EVAL_NAME],
                concurrency=concurrency,
                reporter=REPORTER,
                sending=sending_logs(),
            )
        )
    return made
