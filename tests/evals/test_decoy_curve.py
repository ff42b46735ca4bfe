"""Acceptance: a decoy sweep with the lexical baseline through the real CLI; the report draws the
degradation curve, and it falls as decoys are added (a well-named decoy draws the agent away)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from analysis.report import main as report_main
from analysis.rescore import score_run
from harness.cases import load_cases
from harness.recording.store import load_run
from tests.analysis.browser import drawn_in, rendered_dom
from tests.evals.cli import offline_env, run_braintrust_eval

CASES = (
    "add-column-reading-time",
    "shop-rename-column-phone",
    "shop-alter-type-price-precision",
    "drop-column-excerpt",
)


@pytest.mark.long  # a sweep of catalog sizes; test_cli_configuration.py sweeps two
def test_the_degradation_curve_falls_as_decoys_are_added(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    chosen = [case for case in load_cases() if case.id in CASES]
    dataset.write_text(yaml.safe_dump({"version": 1, "cases": [c.model_dump(mode="json") for c in chosen]}))
    results = tmp_path / "results"
    env = offline_env(
        results,
        EVAL_MODEL="control:lexical",
        EVAL_DECOY_SWEEP="0,2",
        EVAL_DATASET=str(dataset),
        EVAL_RUN_ID="sweep",
    )
    lines = run_braintrust_eval(env, "evals/eval_prepare_migration.py")
    assert sorted(line["metadata"]["decoys"] for line in lines) == [0, 2]

    _, records = load_run(results / "sweep")
    passed: dict[int, list[bool]] = defaultdict(list)
    for trial in score_run(records, {case.id: case for case in chosen}):
        passed[trial.record.config.decoy_count].append(bool(trial.verdicts["all_scores"]))
    assert sum(passed[0]) == len(CASES) and sum(passed[2]) == 1  # only drop-column-excerpt resists the decoy
    decoy_calls = [r for r in records if any(call.decoy for call in r.tool_calls)]
    assert {r.tool_calls[0].name for r in decoy_calls} == {"apply_schema_change"}

    page = tmp_path / "report.html"
    pictures = tmp_path / "pictures"
    assert (
        report_main(
            [str(results / "sweep"), "--dataset", str(dataset), "--out", str(page), "--pictures", str(pictures)]
        )
        == 0
    )
    dom = rendered_dom(page, tmp_path)
    assert drawn_in(dom, "decoy-curve-0") >= 2  # the line and its points
    # control agents cost $0, so no cost picture is drawn
    assert sorted(path.name for path in pictures.iterdir()) == ["decoys.svg", "pass-rates.svg"]
