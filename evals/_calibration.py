"""The judge calibration Eval: the task is the factuality judge itself, the expected output the label.

Defined only when asked (`EVAL_JUDGE_CALIBRATION=1`, as `make calibrate` does), so `make eval`
neither pays for ~80 judge calls per judge model nor changes what it measures. One experiment per
judge model (`EVAL_CALIBRATION_JUDGES`, default the configured judge model) and template version,
so judges and prompt versions line up side by side in Braintrust. Every verdict is also written to
`results/<run id>/judge_calibration.jsonl` for `python -m analysis.calibrate`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from braintrust import Eval, EvalCase, Reporter
from braintrust.score import Score

from analysis.agreement import measure
from analysis.calibrate import as_json, render
from analysis.calibration_records import VerdictRecord, VerdictStore
from evals._experiments import braintrust_project
from evals._settings import CALIBRATION_SWITCH, CalibrationConfigError, EvalSettings, current
from harness.recording.store import git_commit
from scorers.factuality import classify, render_conversation
from scorers.judge import JudgeSettings, judge_settings, no_judge_reason
from scorers.judge_examples import JudgeExample, examples_path, load_examples
from scorers.judge_template import CHOICES, JudgeTemplate, load_template, template_path

SWITCH = CALIBRATION_SWITCH
EVAL_NAME = "judge_calibration"
__all__ = ["CalibrationConfigError", "define_calibration_evals"]


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


def make_task(settings: JudgeSettings, template: JudgeTemplate, store: VerdictStore) -> Any:
    """Judge one labelled example with the production prompt, and keep the verdict."""

    async def task(input: dict[str, Any], hooks: Any) -> str | None:
        example = JudgeExample.model_validate(hooks.metadata["example"])
        conversation = render_conversation(example.conversation[0], example.conversation[1:])
        verdict = await classify(conversation, example.expected, example.submission, settings, template)
        hooks.metadata.update({"judge_error": verdict.error, "rationale": verdict.rationale})
        described = settings.describe()
        store.append(
            VerdictRecord(
                example_id=example.id,
                label=example.label,
                choice=verdict.choice,
                error=verdict.error,
                rationale=verdict.rationale,
                traps=list(example.traps),
                judge_model=settings.model,
                judge_provider=described["judge_provider"],
                judge_base_url=described["judge_base_url"],
                judge_template=template.ref,
            )
        )
        return verdict.choice

    return task


def make_scorers(template: JudgeTemplate) -> list[Any]:
    """`exact_choice` (1 when the judge chose the label) and `score_distance` (1 − |score gap|)."""

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

    return [exact_choice, score_distance]


def report_eval(evaluator: Any, result: Any, verbose: bool, jsonl: bool) -> dict[str, Any]:
    """Braintrust's summary, then the agreement numbers of this judge (as `analysis.calibrate` prints them)."""
    metadata = dict(evaluator.metadata or {})
    pairs = [(str(item.expected), str(item.output)) for item in result.results if item.output is not None]
    errors = [item for item in result.results if item.output is None]
    first_error = next((str((item.metadata or {}).get("judge_error") or item.error) for item in errors), None)
    scores = metadata.get("choice_scores") or {}
    agreement = measure(pairs, CHOICES, scores, judge_errors=len(errors)) if scores else None
    report = {
        "judge_model": metadata.get("judge_model"),
        "judge_template": metadata.get("judge_template"),
        "choice_scores": scores,
        "agreement": agreement,
        "traps": {},
        "first_judge_error": first_error,
    }
    title = evaluator.experiment_name or evaluator.eval_name
    if agreement is not None:
        if jsonl:
            print(json.dumps({"calibration": title, "metadata": metadata, **as_json(report)}, default=str))
        else:
            print(str(result.summary))
            print(render(report))
    print(f"   verdicts kept in {metadata.get('results')}", file=sys.stderr)
    return {"title": title, "examples": len(result.results), "judge_errors": len(errors), "first_error": first_error}


def report_run(reports: list[dict[str, Any]], verbose: bool, jsonl: bool) -> bool:
    """Fail the run when a judge failed on any example: a kappa over a silently shrunk set misleads."""
    ok = True
    for report in reports:
        if not report["examples"]:
            print(f"FAIL {report['title']}: no examples were judged", file=sys.stderr)
            ok = False
        elif report["judge_errors"]:
            print(
                f"FAIL {report['title']}: the judge failed on {report['judge_errors']} of {report['examples']} "
                f"examples, first: {report['first_error']}",
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


def define_calibration_evals() -> None:
    """Declare one Eval per judge model, when `EVAL_JUDGE_CALIBRATION` asks for them."""
    if not requested():
        return
    settings = judge_settings()
    if settings is None:
        raise CalibrationConfigError(f"{SWITCH} is set but {no_judge_reason()}")
    template = load_template(template_path())
    examples = load_examples(examples_path())
    store = VerdictStore(run_folder())
    models = judge_models(settings)
    store.write_info(
        {
            "kind": "judge_calibration",
            "git_commit": git_commit(),
            "dataset": str(examples_path()),
            "examples": len(examples),
            "judge_models": models,
            "judge_route": {key: value for key, value in settings.describe().items() if key != "judge_model"},
            "templates": {template.ref: template.choice_scores},
        }
    )
    project = braintrust_project()
    concurrency = current().calibration_concurrency
    for model in models:
        judge = dataclasses.replace(settings, model=model)
        Eval(
            project,
            experiment_name=f"{EVAL_NAME} · {model} · {template.ref}",
            data=rows(examples),
            task=make_task(judge, template, store),
            scores=make_scorers(template),
            trial_count=1,
            max_concurrency=concurrency,
            metadata={
                "eval": EVAL_NAME,
                **judge.describe(),
                "judge_template": template.ref,
                "choice_scores": template.choice_scores,
                "dataset": str(examples_path()),
                "examples": len(examples),
                "git_commit": git_commit(),
                "run_id": store.run_dir.name,
                "results": str(store.run_dir),
            },
            tags=[EVAL_NAME],
            reporter=REPORTER,
        )
