"""The Braintrust side of one trial: dataset rows and the task that runs a row through the harness.

Shared by the plain evals (`evals/_wiring.py`) and the adaptive and A/B rounds (`braintrust_run/adaptive.py`),
so neither imports the other's definitions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from braintrust import EvalCase

from braintrust_run.experiments import experiment_metadata
from braintrust_run.playground import RowError, report_row_error, row_case, settings_for
from braintrust_run.scoring import READERS, keep_scores
from braintrust_run.shard import Shard
from braintrust_run.slots import provider_slot
from braintrust_run.start import ensure_started, fill_at_start, publish_started_metadata
from braintrust_run.uploads import trial_metadata
from harness.cases import Case
from harness.config import Settings
from harness.models.providers.registry import provider_spec
from harness.recording import trial_registry
from harness.recording.records import TrialRecord
from harness.run.shared import run_trial
from scorers.metrics import trial_metrics


def planned_metadata(
    eval_name: str, settings: Settings, cases: list[Case], trials: int, shard: Shard | None = None
) -> dict[str, Any]:
    """The experiment's metadata (`braintrust_run.experiments`), its tool view to be filled in when the run
    starts (`braintrust_run.start`)."""
    metadata = experiment_metadata(eval_name, settings, cases, trials, shard)
    fill_at_start(settings, cases[0].scenario if cases else "", metadata)
    return metadata


def plan_rows(plan: list[tuple[Case, int]]) -> list[EvalCase[str, str]]:
    """One Braintrust row per (case, trial): lean metadata, the case itself stays with the task (`make_task`)."""
    made: list[EvalCase[str, str]] = []
    for case, index in plan:
        metadata = {"case_id": case.id, "scenario": case.scenario, "fixture": case.fixture, "trial_index": index}
        made.append(
            EvalCase(input=case.input, expected=case.expected_answer, metadata=metadata, tags=case.tags, trial_count=1)
        )
    return made


def rows(cases: list[Case]) -> list[EvalCase[str, str]]:
    """One row per case (trial 0); adaptive rounds set each row's trial index themselves."""
    return plan_rows([(case, 0) for case in cases])


def base_url_of(settings: Settings) -> str | None:
    """The endpoint the model is reached at (its provider's `*_BASE_URL`), or None for the default."""
    spec = provider_spec(settings.provider)
    values = settings.provider_values()
    names = [var.name for var in spec.env if var.name.endswith("_BASE_URL")] if spec else []
    return next((values[name] for name in names if values.get(name)), None)


def make_task(
    settings: Settings,
    scenario: str,
    cases: Iterable[Case],
    on_record: Any = None,
    budget: dict[str, int] | None = None,
) -> Any:
    """The Braintrust task: one trial of one case (the runner also keeps it in the results store).

    A row names its case by id among `cases`, the ones its rows were made for (a row of a pushed
    Braintrust dataset carries its case whole). Rows carry their trial index; `on_record(case,
    trial_index, record or None)` hears of every finished trial (braintrust_run/adaptive.py). The trial
    starts once it holds a model slot: the wait is kept on the record as `queue_s`, outside the
    trial's own clock and EVAL_TRIAL_TIMEOUT."""

    by_id = {case.id: case for case in cases}

    async def task(input: str, hooks: Any) -> str:
        await ensure_started()  # at once when the data did it; the first task of rounds built elsewhere does it
        await publish_started_metadata(settings, scenario, hooks.span)  # once per experiment
        try:  # a row of this run, or one the playground or a Braintrust dataset sent (braintrust_run/playground.py)
            case = row_case(by_id, input, getattr(hooks, "expected", None), hooks.metadata, scenario)
            chosen = settings_for(settings, getattr(hooks, "parameters", None))
        except RowError as error:
            report_row_error(hooks, error)
            raise
        trial_index = int(hooks.metadata.get("trial_index", hooks.trial_index))
        try:
            async with provider_slot(chosen.model, budget or {}, base_url_of(chosen)) as slot:
                record: TrialRecord = await run_trial(case, trial_index, chosen, queue_s=slot.waited_s)
        except BaseException:
            if on_record is not None:
                on_record(case, trial_index, None)
            raise
        if on_record is not None:
            on_record(case, trial_index, record)
        hooks.metadata.update(trial_metadata(record))
        hooks.metadata["trial_key"] = key = trial_registry.register(record, case, readers=READERS)
        keep_scores(key, record, chosen.results_dir, chosen.run_id)  # beside the record, in the run's folder
        hooks.span.log(metrics=trial_metrics(record))
        return record.final_answer

    return task
