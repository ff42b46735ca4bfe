"""One run, whichever door it comes in by (braintrust_run/doors.py).

The same settings and the same one-case dataset are started through several doors: the launcher
(`python -m evals`, what `make eval` runs), the Braintrust CLI on one eval file, and Python on that
file. Each must make the same choices (the surface the twin wears, the trial plan, the judge, local
mode), say them in the same first lines, and record the same settings in `run.json`. `make test` runs
the launcher and the CLI on one file; `make test-long` adds `braintrust eval evals/`, `python <file>`,
`python -m evals.<file>` and `make eval`.
(`braintrust eval --dev` serves the same experiments to the playground; it is not started here.)
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.servers.neon.published.pin import pinned_label
from harness.servers.neon.surface_label import OWN_LABEL
from tests.evals.cli import DATASET_HEAD, offline_env, run_in_repo, subtitle_case

EVAL_FILE = "evals/eval_prepare_migration.py"
BRAINTRUST = str(Path(sys.executable).parent / "braintrust")
DOORS: dict[str, list[str]] = {  # what `make eval` runs, and the mission's own command
    "launcher": [sys.executable, "-m", "evals", EVAL_FILE],
    "cli-file": [BRAINTRUST, "eval", "--no-send-logs", EVAL_FILE],
}
LONG_DOORS: dict[str, list[str]] = {
    "python-file": [sys.executable, EVAL_FILE],
    "cli-folder": [BRAINTRUST, "eval", "--no-send-logs", "evals"],
    "python-module": [sys.executable, "-m", "evals.eval_prepare_migration"],
    "make": ["make", "--no-print-directory", "eval"],
}
CHOICES = ("evals: surface: ", "evals: no BRAINTRUST_API_KEY", "evals: factuality")  # the resolved choices' lines
RUN_SPECIFIC = {"run_id", "results_dir"}  # settings that differ between two runs by design


def _run_through(door: str, command: list[str], tmp_path: Path) -> tuple[list[str], dict[str, Any]]:
    """The door's lines that state the run's choices (in order, once each) and its run.json settings."""
    dataset = tmp_path / "one case.yaml"
    if not dataset.exists():
        dataset.write_text(DATASET_HEAD + subtitle_case(), encoding="utf-8")
    results = tmp_path / f"results {door}"
    env = offline_env(results, EVAL_MODEL="control:oracle", EVAL_DATASET=str(dataset))
    for chosen in ("EVAL_TRIALS", "EVAL_SURFACE", "LOCALNEON_SURFACE", "BRAINTRUST_API_KEY"):
        env.pop(chosen, None)  # the doors choose these: the trial count offline, the surface, local mode
    if door == "make":
        command = [*command, f"EVAL_DATASET={dataset}"]
    completed = run_in_repo(command, env, timeout=600)
    assert completed.returncode == 0, f"{door}: {completed.stderr[-3000:]}"
    said = [line for line in completed.stderr.splitlines() if line.startswith("evals: ")]
    assert said and said[0].startswith("evals: surface: "), f"{door}: the surface is not its first word: {said[:3]}"
    lines = [line for line in said if line.startswith(CHOICES)]
    [run_json] = list(results.glob("*/run.json"))
    settings = json.loads(run_json.read_text(encoding="utf-8"))["settings"]
    return lines, {name: value for name, value in settings.items() if name not in RUN_SPECIFIC}


def _assert_same_run(doors: dict[str, list[str]], tmp_path: Path) -> None:
    seen = {door: _run_through(door, command, tmp_path) for door, command in doors.items()}
    first_door, (first_lines, first_settings) = next(iter(seen.items()))
    surface = pinned_label() if shutil.which("node") else OWN_LABEL
    assert first_settings["surface"] == surface, first_lines
    assert [line.split(":")[1].strip() for line in first_lines][:1] == ["surface"], first_lines
    assert len(first_lines) == len(set(first_lines)) == 3, first_lines  # said once each, not again by the CLI
    for door, (lines, settings) in seen.items():
        assert lines == first_lines, f"{door} said other first lines than {first_door}"
        differing = sorted(
            name for name in {*settings, *first_settings} if settings.get(name) != first_settings.get(name)
        )
        assert not differing, f"{door} ran other settings than {first_door}: {differing}"


def test_the_launcher_the_cli_and_python_run_the_same_run(tmp_path: Path) -> None:
    _assert_same_run(DOORS, tmp_path)


@pytest.mark.long
def test_every_door_runs_the_same_run(tmp_path: Path) -> None:
    _assert_same_run({**DOORS, **LONG_DOORS}, tmp_path)
