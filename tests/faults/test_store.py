"""A results folder that becomes unwritable mid-run: the run fails, says how many records were lost,
and stops starting trials (each would be lost too)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.evals.cli import REPO_ROOT
from tests.faults.conftest import EVAL_FILE, World, fault_env, wait_for_records


@contextlib.contextmanager
def unwritable(*paths: Path) -> Iterator[None]:
    """Refuse writes to `paths` for real: read-only modes, or (as root, who ignores modes) immutable."""
    as_root = os.geteuid() == 0
    if as_root and shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a folder unwritable")
    try:
        for path in paths:
            if as_root:
                subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)
            else:
                path.chmod(0o500 if path.is_dir() else 0o400)
        yield
    finally:
        for path in paths:
            if as_root:
                subprocess.run(["chattr", "-i", str(path)], check=False, capture_output=True)
            else:
                path.chmod(0o700 if path.is_dir() else 0o600)


def test_a_results_folder_made_unwritable_mid_run_fails_the_run(world: World, dataset: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = fault_env(world, results, dataset, EVAL_TRIALS="4", EVAL_CONCURRENCY="2", EVAL_MODEL="control:oracle")
    command = [str(Path(sys.executable).parent / "braintrust"), "eval", "--no-send-logs", "--no-progress-bars"]
    cli = subprocess.Popen(
        [*command, EVAL_FILE], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    trials = results / world.run_id / "trials.jsonl"
    try:
        wait_for_records(cli, trials, 1)
        with unwritable(trials, trials.parent):
            kept = trials.read_text().count("\n")
            _, stderr = cli.communicate(timeout=300)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode != 0, stderr[-3000:]
    assert trials.read_text().count("\n") == kept, "nothing may be written to an unwritable folder"
    lost = 8 - kept
    assert f"{lost} trial record(s) could not be written to results/" in stderr, stderr[-3000:]
    assert "RECORD LOST, no further trials start" in stderr
    assert "not started: the results store is failing" in stderr, "trials kept being started"
    world.assert_clean(stderr)
