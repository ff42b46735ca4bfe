"""Bad input that used to slip through: each stops the run before any trial, naming what and where."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cases import DatasetError, load_cases
from harness.config import ConfigError, Settings
from tests.evals.cli import offline_env, run_in_repo
from tests.faults.conftest import EVAL_FILE, SMALL_DATASET, World, fault_env

NOT_UTF8 = "version: 1\ncases: []\n# caf\xe9 in Latin-1\n".encode("latin-1")


@pytest.mark.parametrize("run_id", [".", "..", "a/b", "../escape", "a\\b"])
def test_a_run_id_that_is_not_a_folder_name_is_refused(run_id: str) -> None:
    with pytest.raises(ConfigError, match="EVAL_RUN_ID"):
        Settings.from_env(env={"EVAL_RUN_ID": run_id}, dotenv_path=None, warn=False)


def test_a_run_id_with_dots_inside_is_fine() -> None:
    settings = Settings.from_env(env={"EVAL_RUN_ID": "nightly.2026-11-30"}, dotenv_path=None, warn=False)
    assert settings.run_id == "nightly.2026-11-30"


def test_a_case_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1-cases.yaml"
    path.write_bytes(NOT_UTF8)
    with pytest.raises(DatasetError, match=f"{path}: not UTF-8 text"):
        load_cases(path)


def test_an_env_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_bytes(b"EVAL_TRIALS=2\nEVAL_SYSTEM_PROMPT=caf\xe9\n")
    with pytest.raises(ConfigError, match=f"{path}: not UTF-8 text"):
        Settings.from_env(env={}, dotenv_path=path, warn=False)


def test_braintrust_eval_run_directly_on_a_broken_dataset_exits_non_zero(tmp_path: Path) -> None:
    """Without `--terminate-on-failure` the CLI used to print the import error and exit 0."""
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(SMALL_DATASET.replace("ADD COLUMN note text", "ADD COLUMN"))
    results = tmp_path / "results"
    completed = run_in_repo(
        [str(Path(sys.executable).parent / "braintrust"), "eval", "--no-send-logs", "evals/"],
        offline_env(results, EVAL_DATASET=str(dataset)),
        timeout=300,
    )
    assert completed.returncode == 2, completed.stderr[-3000:]
    assert f"{dataset}: case 'fault-add-note': reference_sql does not parse" in completed.stderr
    assert not results.exists() or not any(results.rglob("trials.jsonl"))


def test_a_reference_sql_that_does_not_run_on_its_fixture_stops_the_run(
    world: World, dataset: Path, tmp_path: Path
) -> None:
    """It parses, so the loader passes it; run on the fixture (rolled back), it fails: the case is named."""
    dataset.write_text(
        SMALL_DATASET.replace("ALTER TABLE comments ADD COLUMN rating", "ALTER TABLE reviews ADD COLUMN rating")
    )
    results = tmp_path / "results"
    completed = run_in_repo(
        [str(Path(sys.executable).parent / "braintrust"), "eval", "--no-send-logs", EVAL_FILE],
        fault_env(world, results, dataset),
        timeout=300,
    )
    assert completed.returncode == 2, completed.stderr[-3000:]
    expected = f"{dataset}: case 'fault-add-rating': reference_sql does not run on fixture 'blog': "
    assert expected + 'relation "reviews" does not exist' in completed.stderr
    assert "fault-add-note" not in completed.stderr.split("stopping before any trial", 1)[1]
    assert not results.exists() or not any(results.rglob("trials.jsonl")), "no trial may run"
    world.assert_clean(completed.stderr)
