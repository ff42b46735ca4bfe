"""A sharded run's experiments become comparison bases only once every shard's share is merged:
the merge says whether the shards make the whole run, and `python -m braintrust_run.shards_merged` marks the
run's experiments in Braintrust (its recording stand-in here) only then. The whole nightly, shard
by shard, is `tests/harness/test_nightly_shards.py` (long lane)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analysis.merge import merge_runs
from braintrust_run.experiments import is_base_for
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import RUN_FILE, TRIALS_FILE, write_plan
from tests.evals.cli import REPO_ROOT, offline_env
from tests.fakes.braintrust_server import FakeBraintrust

RUN_ID = "nightly-77-1"
KEY = "prepare_migration|control:oracle|neon|default|0"


def shard_folder(root: Path, position: int, shard: str, planned: int, recorded: int) -> Path:
    """A shard's results as its machine leaves them: plan.json and `recorded` records of its own."""
    run = root / f"eval-results-{position}" / RUN_ID
    write_plan(run, planned, pid=1, shard=shard)
    config = TrialConfig(model="control:oracle", server="neon")
    records = [TrialRecord(case_id=f"case-{position}", trial_index=trial, config=config) for trial in range(recorded)]
    (run / TRIALS_FILE).write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    (run / RUN_FILE).write_text(json.dumps({"run_id": RUN_ID}), encoding="utf-8")
    return run


def coverage(tmp_path: Path, shards: list[tuple[str, int, int]]) -> dict[str, Any]:
    runs = [shard_folder(tmp_path / "shards", n, *shard) for n, shard in enumerate(shards)]
    merge_runs(tmp_path / "merged" / RUN_ID, runs)
    return dict(json.loads((tmp_path / "merged" / RUN_ID / RUN_FILE).read_text())["shards"])


def test_every_shard_with_its_whole_share_is_the_whole_run(tmp_path: Path) -> None:
    found = coverage(tmp_path, [("1/2", 3, 3), ("2/2", 2, 2)])
    assert found["complete"] and found["problems"] == []
    assert (found["count"], found["planned_trials"], found["recorded_trials"]) == (2, 5, 5)


@pytest.mark.parametrize(
    ("shards", "problem"),
    [
        ([("1/3", 2, 2), ("3/3", 2, 2)], "shard 2/3 missing"),
        ([("1/2", 3, 2), ("2/2", 2, 2)], "shard 1/2: 2 of 3 planned trials recorded"),
        ([("1/2", 2, 2), ("1/2", 2, 2)], "shard 1/2 twice"),
    ],
)
def test_a_missing_short_or_repeated_shard_is_not_the_whole_run(
    tmp_path: Path, shards: list[tuple[str, int, int]], problem: str
) -> None:
    found = coverage(tmp_path, shards)
    assert not found["complete"] and problem in found["problems"]


def run_mark(braintrust: FakeBraintrust, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**offline_env(tmp_path / "unused"), **braintrust.env()}
    command = [sys.executable, "-m", "braintrust_run.shards_merged", str(tmp_path / "merged" / RUN_ID)]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_whole_merge_marks_the_runs_experiments_and_they_become_bases(tmp_path: Path) -> None:
    coverage(tmp_path, [("1/2", 3, 3), ("2/2", 2, 2)])
    shard_metadata = {"run_id": RUN_ID, "partial": "shard 2/2", "comparison_key": KEY}
    with FakeBraintrust() as braintrust:
        night = braintrust.register_experiment(
            f"prepare_migration · control:oracle · neon · default · {RUN_ID}", shard_metadata
        )
        other = braintrust.register_experiment("another night", {**shard_metadata, "run_id": "nightly-76-1"})
        tomorrow = {"run_id": "nightly-78-1", "comparison_key": KEY}
        assert not is_base_for({"metadata": shard_metadata}, tomorrow)  # a shard's share alone is not a base

        marked = run_mark(braintrust, tmp_path)
        assert marked.returncode == 0, marked.stderr
        assert "complete (2 of 2 shards, 5 of 5 planned trials)" in marked.stdout
        stored = {item["id"]: item["metadata"] for item in braintrust.experiments}
    assert stored[night]["shards_merged"] == "2 of 2 shards, 5 of 5 planned trials"
    assert stored[night]["partial"] == "shard 2/2" and stored[night]["comparison_key"] == KEY  # merged, kept
    assert "shards_merged" not in stored[other]  # another run's experiments are left alone
    assert is_base_for({"metadata": stored[night]}, tomorrow)
    # A shard mark with another partial reason (a filter) stays partial, merged or not.
    assert not is_base_for({"metadata": {**stored[night], "partial": "filter x; shard 2/2"}}, tomorrow)


def test_a_merge_short_of_a_shard_marks_nothing_and_exits_1(tmp_path: Path) -> None:
    coverage(tmp_path, [("1/2", 3, 3)])
    with FakeBraintrust() as braintrust:
        braintrust.register_experiment("the night", {"run_id": RUN_ID, "partial": "shard 1/2", "comparison_key": KEY})
        marked = run_mark(braintrust, tmp_path)
        patches = braintrust.paths("PATCH")
    assert marked.returncode == 1
    assert "not the whole run (shard 2/2 missing)" in marked.stderr and "never a base" in marked.stderr
    assert patches == []
