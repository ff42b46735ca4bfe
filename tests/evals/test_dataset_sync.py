"""The cases as Braintrust datasets: a row holds its case and is checked as a case file's entry is;
`python -m braintrust_run.dataset push` writes only changed rows, keeps rows added in Braintrust, deletes
rows whose case left the YAML; a keyed run records which version of the dataset it ran. Braintrust
is its recording stand-in (`tests/fakes/braintrust_datasets.py`), driven by the real SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.case_rows import case_from_row, case_row
from harness.cases import DatasetError, load_cases
from tests.evals.cli import COUNT_POSTS_CASE, DATASET_HEAD, REPO_ROOT, offline_env, run_braintrust_eval, subtitle_case
from tests.fakes.braintrust_server import FakeBraintrust

COUNT_CASE = COUNT_POSTS_CASE


def test_every_bundled_case_survives_the_trip_through_a_row() -> None:
    for case in load_cases():
        row = case_row(case)
        assert row["id"] == case.id and row["metadata"]["content_hash"] == case.content_hash()
        back = case_from_row(row["input"], row["expected"], row["metadata"], f"row {case.id}")
        assert back.content_hash() == case.content_hash(), case.id


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda row: row["metadata"]["case"].update(reference_sqll="SELECT 1"), "did you mean 'reference_sql'"),
        (lambda row: row["metadata"].pop("case"), "metadata.case is missing"),
        (lambda row: row["metadata"]["case"].update(input="twice"), "metadata.case.input: this field is the row's own"),
        (lambda row: row["metadata"].update(fixture="nowhere"), "fixture 'nowhere' not found"),
        (lambda row: row.update(input="no placeholder"), "input must name the project"),
    ],
)
def test_a_row_that_is_not_a_valid_case_is_refused_naming_what_is_wrong(edit: Any, message: str) -> None:
    case = load_cases(scenario="prepare")[0]
    row = case_row(case)
    edit(row)
    with pytest.raises(DatasetError) as refused:
        case_from_row(row["input"], row["expected"], row["metadata"], f"row {case.id}")
    assert str(refused.value).startswith(f"row {case.id}") and message in str(refused.value), str(refused.value)


def push(braintrust: FakeBraintrust, dataset: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**offline_env(dataset.parent / "results", EVAL_DATASET=str(dataset)), **braintrust.env()}
    command = [sys.executable, "-m", "braintrust_run.dataset", "push", *args]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_push_writes_only_what_changed_keeps_ui_rows_and_a_run_records_the_version(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(DATASET_HEAD + subtitle_case() + COUNT_CASE, encoding="utf-8")
    with FakeBraintrust() as braintrust:
        dry = push(braintrust, dataset, "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert "prepare-cases: 1 cases, 1 would write" in dry.stdout and braintrust.dataset_writes("prepare-cases") == 0

        first = push(braintrust, dataset)
        assert first.returncode == 0, first.stderr
        assert "prepare-cases: 1 cases, 1 written" in first.stdout
        assert "tool_selection-cases: 1 cases, 1 written" in first.stdout
        [row] = braintrust.dataset_rows("prepare-cases")
        assert row["id"] == "add-column-subtitle" and row["metadata"]["pushed"] is True

        again = push(braintrust, dataset)
        assert "prepare-cases: 1 cases, 0 written; 1 unchanged" in again.stdout
        assert braintrust.dataset_writes("prepare-cases") == 1  # nothing rewritten

        # One case edited in the YAML, one row added in the UI: one row written, the UI's kept.
        extra = case_row(load_cases(scenario="prepare")[0])
        braintrust.add_row_in_the_ui("prepare-cases", extra)
        dataset.write_text(dataset.read_text().replace("Shall I apply it to main?", "Apply it to main?"))
        edited = push(braintrust, dataset)
        assert edited.returncode == 0, edited.stderr
        assert f"prepare-cases: 1 cases, 1 written; 0 unchanged; 1 added in Braintrust kept ({extra['id']})" in (
            edited.stdout
        )
        assert braintrust.dataset_writes("prepare-cases") == 3  # the first push, the UI's row, the edit
        version = edited.stdout.split("prepare-cases")[1].split("version ")[1].split()[0]
        assert {row["id"] for row in braintrust.dataset_rows("prepare-cases")} == {"add-column-subtitle", extra["id"]}

        # A keyed run records the version its cases are; after a YAML edit it says it is out of step.
        env = {**offline_env(tmp_path / "results", EVAL_DATASET=str(dataset)), **braintrust.env()}
        env["EVAL_MODEL"] = "control:oracle"
        run_braintrust_eval(env, "evals/eval_prepare_migration.py", send_logs=True)
        [experiment] = [e for e in braintrust.experiments if e["name"].startswith("prepare_migration")]
        recorded = experiment["metadata"]["braintrust_dataset"]
        assert recorded["name"] == "prepare-cases" and recorded["version"] == version and recorded["in_step"] is True

        dataset.write_text(dataset.read_text().replace("Apply it to main?", "Shall I apply it?"))
        probe = (
            "import json; from braintrust_run.login import start_login; start_login(); "
            "from braintrust_run.dataset import recorded_version; from harness.cases import load_cases; "
            "print(json.dumps(recorded_version('neon-mcp-evals', 'prepare', load_cases(scenario='prepare'))))"
        )
        asked = subprocess.run(
            [sys.executable, "-c", probe], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert asked.returncode == 0, asked.stderr
        stale = json.loads(asked.stdout)
        assert (
            stale["in_step"] is False
            and stale["differs"] == ["add-column-subtitle"]
            and "make dataset" in stale["note"]
        )

        # The case leaves the YAML (another takes its place): its pushed row goes, the UI's row stays.
        dataset.write_text(DATASET_HEAD + subtitle_case("add-subtitle-again") + COUNT_CASE, encoding="utf-8")
        removed = push(braintrust, dataset)
        assert removed.returncode == 0, removed.stderr
        assert "1 deleted (add-column-subtitle)" in removed.stdout, removed.stdout
        assert {row["id"] for row in braintrust.dataset_rows("prepare-cases")} == {"add-subtitle-again", extra["id"]}


def test_push_without_a_braintrust_login_says_so_and_exits_2(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(DATASET_HEAD + COUNT_CASE, encoding="utf-8")
    env = offline_env(tmp_path / "results", EVAL_DATASET=str(dataset))
    command = [sys.executable, "-m", "braintrust_run.dataset", "push"]
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "no Braintrust login" in done.stderr, done.stderr
