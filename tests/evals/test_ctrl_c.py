"""Ctrl-C in the middle of `make eval` stops the run and leaves no sandbox behind.

The terminal sends SIGINT to the whole foreground process group (launcher, CLI, local server); the
local server runs in its own session so it outlives the harness's cleanup of in-flight trials.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from localneon.pg import get_cluster
from tests.evals.cli import REPO_ROOT, TEST_PGDATA, offline_env


def eval_projects(run_id: str) -> list[str]:
    os.environ.setdefault("LOCALNEON_PGDATA", str(TEST_PGDATA))
    with psycopg.connect(get_cluster().conninfo("localneon_catalog")) as conn:
        rows = conn.execute("SELECT name FROM projects WHERE name LIKE %s", (f"eval-{run_id}-%",)).fetchall()
    return [row[0] for row in rows]


def test_interrupting_a_run_cleans_up_every_sandbox(tmp_path: Path) -> None:
    run_id = "ctrlc-" + secrets.token_hex(3)
    env = offline_env(tmp_path, EVAL_RUN_ID=run_id, EVAL_TRIALS="3", EVAL_CONCURRENCY="4")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "evals", "--no-progress-bars"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )
    trials = tmp_path / run_id / "trials.jsonl"
    deadline = time.monotonic() + 120
    while not (trials.exists() and trials.read_text().count("\n") >= 3):
        assert launcher.poll() is None, launcher.stderr.read() if launcher.stderr else ""
        assert time.monotonic() < deadline, "no trial finished within two minutes"
        time.sleep(0.1)
    os.killpg(launcher.pid, signal.SIGINT)  # what Ctrl-C does
    _, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 130, stderr[-3000:]
    assert "waiting for the run to clean up" in stderr
    finished = trials.read_text().count("\n")
    assert finished < 3 * 72, f"the run was not interrupted:\n{stderr[-3000:]}"
    left = eval_projects(run_id)
    assert left == [], f"interrupted trials left their projects behind: {left}\n{stderr[-6000:]}"
