"""A large run made from a small real one: the records of a few real trials copied under new case ids
and trial indices, so the page of `make eval`'s full shape (39 cases, 20 trials each, both control
agents) can be rendered and measured without running 1,560 trials.

Each copy is the real record of the same model on a real case of the same scenario, written with the
store's own writer; its case is that real case under the new id (a tool-selection copy is a prepare
case re-labelled, since the small run holds none), so re-scoring it runs the real scorers.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import yaml

from analysis.rescore import ScoredTrial, rescore
from harness.cases import Case, load_cases
from harness.recording.records import TrialRecord
from harness.recording.store import RUN_FILE, TRIALS_FILE, append_whole, load_run

TRIALS = 20


def bundled_shape() -> dict[str, int]:
    """How many cases of each scenario `make eval` runs: the bundled dataset's (prepare 19, ...)."""
    return dict(Counter(case.scenario for case in load_cases()))


def copy_cases(sources: list[Case], shape: dict[str, int]) -> list[Case]:
    """`shape[scenario]` cases per scenario, each a source case under a new id, taken in turn."""
    by_scenario = {scenario: [c for c in sources if c.scenario == scenario] for scenario in ("prepare", "complete")}
    copies = []
    for scenario, count in sorted(shape.items()):
        pool = by_scenario.get(scenario) or by_scenario["prepare"]
        for number in range(count):
            source = pool[number % len(pool)]
            new_id = f"{scenario.replace('_', '-')}-{number:02d}-{source.id}"
            copies.append(source.model_copy(update={"id": new_id, "scenario": scenario}))
    return copies


def source_id(copy: Case, sources: list[Case]) -> str:
    return next(source.id for source in sources if copy.id.endswith(f"-{source.id}"))


def build(small_run: Path, dataset: str, out: Path, trials: int = TRIALS) -> tuple[Path, Path, int]:
    """Write the large run folder and its cases under `out`; returns (run folder, dataset file, trials)."""
    info, records = load_run(small_run)
    wanted = {record.case_id for record in records}
    sources = [case for case in load_cases(dataset) if case.id in wanted]
    copies = copy_cases(sources, bundled_shape())
    by_key: dict[tuple[str, str], list[TrialRecord]] = {}
    for record in records:
        by_key.setdefault((record.config.model, record.case_id), []).append(record)
    folder = out / "large"
    folder.mkdir(parents=True)
    (folder / RUN_FILE).write_text(json.dumps({**info, "run_id": folder.name}), encoding="utf-8")
    lines = []
    for model in sorted({record.config.model for record in records}):
        for case in copies:
            originals = sorted(by_key[(model, source_id(case, sources))], key=lambda r: r.trial_index)
            for index in range(trials):
                copy = originals[index % len(originals)].model_copy(
                    update={"case_id": case.id, "trial_index": index, "case_hash": case.content_hash()}
                )
                lines.append(copy.model_dump_json() + "\n")
    append_whole(folder / TRIALS_FILE, "".join(lines).encode("utf-8"))  # the store's writer, once, not 1,560 fsyncs
    cases_file = out / "cases.yaml"
    dumped = [case.model_dump(mode="json", exclude={"fixture_path", "source_file"}) for case in copies]
    cases_file.write_text(yaml.safe_dump({"version": 1, "cases": dumped}), encoding="utf-8")
    return folder, cases_file, len(lines)


def score_copies(records: list[TrialRecord], cases: dict[str, Case]) -> list[ScoredTrial]:
    """`score_run`, scoring each distinct trial once: copies that differ only in their ids (case id,
    trial index, case hash) get the scores their first copy got from the real scorers."""
    done: dict[tuple[str, str], ScoredTrial] = {}
    scored = []
    for record in records:
        case = cases[record.case_id]
        key = (
            record.model_dump_json(exclude={"case_id", "trial_index", "case_hash"}),
            case.model_dump_json(exclude={"id", "fixture_path", "source_file"}),
        )
        if key not in done:
            done[key] = rescore(record, case)
        scored.append(replace(done[key], record=record, case=case))
    return scored
