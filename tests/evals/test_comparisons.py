"""Acceptance: every keyed experiment is compared like for like, or not at all (issue 25, item 1).

Against the recording stand-in of Braintrust's API and the real `braintrust eval` CLI: two models
in one run's first keyed experiments are never compared with each other (the stand-in, like
Braintrust, would fall back to the project's newest experiment), the console and the metadata say
there was no base, and a `--filter`ed run is compared with the full one before it but never
becomes the next full run's base.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from braintrust_run.experiments import NO_BASE, is_base_for, partial_reason
from braintrust_run.shard import parse_shard
from tests.evals.cli import DATASET_HEAD, offline_env, run_in_repo, subtitle_case
from tests.fakes.braintrust_server import FakeBraintrust

EVAL_FILE = "evals/eval_prepare_migration.py"
TWO_CASES = (
    DATASET_HEAD
    + subtitle_case()
    + """  - id: add-column-category
    scenario: prepare
    fixture: blog
    input: "Could you add a category column to posts in project {project_id}? Plain text, nullable is fine."
    reference_sql: "ALTER TABLE posts ADD COLUMN category text;"
    target: {table: posts, column: category}
    required_tools: [prepare_database_migration]
    forbidden_tools: [complete_database_migration]
    expected_answer: "I added category to posts on a temporary branch. Shall I apply it to main?"
"""
)
NO_COMPARISON = f"{NO_BASE}: no comparison"


def braintrust_eval(env: dict[str, str], *flags: str, path: str = EVAL_FILE) -> subprocess.CompletedProcess[str]:
    """The real CLI, sending to the stand-in the env points at, with extra flags; it must succeed."""
    cli = str(Path(sys.executable).parent / "braintrust")
    # The file first: `--filter` takes every word after it.
    command = [cli, "eval", "--terminate-on-failure", "--jsonl", "--no-progress-bars", path, *flags]
    completed = run_in_repo(command, env, timeout=400)
    assert completed.returncode == 0, (
        f"exit {completed.returncode}:\n{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}"
    )
    return completed


def by_model(experiments: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {experiment["metadata"]["model"]: experiment for experiment in experiments}


@pytest.mark.long  # three keyed runs in a row; the test below checks the marks a base is chosen by
def test_first_runs_compare_with_nothing_and_filtered_runs_never_become_bases(tmp_path: Path) -> None:
    dataset = tmp_path / "two.yaml"
    dataset.write_text(textwrap.dedent(TWO_CASES))
    with FakeBraintrust() as braintrust:

        def env(name: str, models: str) -> dict[str, str]:
            return offline_env(tmp_path / name, EVAL_MODEL=models, EVAL_DATASET=str(dataset), **braintrust.env())

        # 1. The first keyed run of two models: neither is compared with the other, and both say so.
        first_run = braintrust_eval(env("first", "control:oracle,control:unsafe"))
        first = by_model(braintrust.experiments)
        assert sorted(first) == ["control:oracle", "control:unsafe"]
        for experiment in first.values():
            assert experiment["base_exp_id"] is None
            assert braintrust.compared_with(experiment["id"]) == []  # no summary the server could fall back in
            assert experiment["metadata"]["base_experiment_id"] is None
            assert experiment["metadata"]["comparison"] == f"none: {NO_BASE}"
            assert experiment["metadata"]["partial"] is None
            assert experiment["metadata"]["tool_count"] > 0  # filled in at the run's start, before registration
            assert f"{experiment['name']}: {NO_COMPARISON}" in first_run.stderr
        assert first_run.stderr.count(NO_COMPARISON) == 2

        # 2. One case of one model (`--filter`): marked partial, compared with the full run before it.
        filtered_run = braintrust_eval(
            env("filtered", "control:oracle"), "--filter", "metadata.case_id=^add-column-subtitle$"
        )
        filtered = braintrust.experiments[-1]
        assert len(braintrust.root_rows(filtered["id"])) == 1
        assert filtered["metadata"]["partial"] == "filter metadata.case_id=^add-column-subtitle$"
        assert filtered["base_exp_id"] == first["control:oracle"]["id"]
        assert braintrust.compared_with(filtered["id"]) == [first["control:oracle"]["id"]]
        assert NO_COMPARISON not in filtered_run.stderr

        # 3. The next full run: each model's base is its own full experiment, never the filtered one.
        braintrust_eval(env("third", "control:oracle,control:unsafe"))
        third = by_model(braintrust.experiments[-2:])
        for model, experiment in third.items():
            assert experiment["base_exp_id"] == first[model]["id"], model
            assert braintrust.compared_with(experiment["id"]) == [first[model]["id"]]
            assert experiment["metadata"]["comparison"].startswith(f"compared with {first[model]['name']}")


def test_partial_runs_are_marked_and_never_chosen_as_a_base() -> None:
    metadata = {"comparison_key": "prepare|m|local|default|0", "run_id": "now"}
    complete = {"metadata": {"comparison_key": metadata["comparison_key"], "run_id": "before", "partial": None}}
    assert is_base_for(complete, metadata)
    assert not is_base_for({"metadata": {**complete["metadata"], "partial": "shard 1/4"}}, metadata)
    assert not is_base_for({"metadata": {**complete["metadata"], "run_id": "now"}}, metadata)  # the same run
    assert not is_base_for(
        {"metadata": {**complete["metadata"], "comparison_key": "prepare|other|local|default|0"}}, metadata
    )
    assert partial_reason(None, {}) is None
    assert partial_reason(parse_shard("2/4"), {}) == "shard 2/4"
    assert partial_reason(None, {"EVAL_TRIALS": "adaptive:20"}) == "adaptive rounds"
    assert partial_reason(None, {"EVAL_AB_A": "a.yaml", "EVAL_AB_B": "b.yaml"}) == "A/B arm"


def test_adaptive_rounds_name_a_like_for_like_base_and_never_the_projects_newest(tmp_path: Path) -> None:
    """Rounds are declared apart from the plain evals (`braintrust_run/adaptive.py`): they pick their base the
    same way, so Braintrust never falls back to another model's newer experiment."""
    dataset = tmp_path / "one.yaml"
    dataset.write_text(textwrap.dedent(DATASET_HEAD + subtitle_case()))
    key = "prepare_migration|control:oracle|local|default|0"
    with FakeBraintrust() as braintrust:
        same = {"comparison_key": key, "run_id": "earlier", "partial": None}
        base = braintrust.register_experiment("earlier", same)
        other = {"comparison_key": key.replace("oracle", "unsafe"), "run_id": "newer", "partial": None}
        braintrust.register_experiment("newer", other)
        env = offline_env(
            tmp_path / "results", EVAL_MODEL="control:oracle", EVAL_DATASET=str(dataset), EVAL_TRIALS="adaptive:2"
        )
        env["EVAL_SURFACE"] = "own"  # the key above is the twin's own words' (a worn surface adds itself)
        braintrust_eval({**env, **braintrust.env()})
        [rounds] = [e for e in braintrust.experiments if e["name"].startswith("prepare_migration")]
    assert rounds["metadata"]["partial"] == "adaptive rounds"  # never a base itself
    assert rounds["base_exp_id"] == base  # its own kind, not the newer unsafe one
