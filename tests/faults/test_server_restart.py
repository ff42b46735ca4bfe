"""The local server killed mid-run: the harness restarts it, trials in flight keep a working API
client (a trial whose snapshots failed is never `ok`), and every project is still deleted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.evals.cli import REPO_ROOT
from tests.faults.conftest import EVAL_FILE, World, fault_env, processes_of, wait_for_records


def server_pid(world: World) -> int:
    """The run's local server (its command line names the run's temp folder)."""
    for line in processes_of(world.tmp):
        pid, command = line.split(": ", 1)
        if "-m localneon" in command:
            return int(pid)
    raise AssertionError("the run has no local server")


def test_a_server_killed_mid_run_is_restarted_and_nothing_is_lost(world: World, dataset: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = fault_env(world, results, dataset, EVAL_TRIALS="3", EVAL_CONCURRENCY="2", EVAL_MODEL="control:oracle")
    command = [str(Path(sys.executable).parent / "braintrust"), "eval", "--no-send-logs", "--no-progress-bars"]
    cli = subprocess.Popen(
        [*command, "--jsonl", EVAL_FILE],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    trials = results / world.run_id / "trials.jsonl"
    try:
        wait_for_records(cli, trials, 1)
        first = server_pid(world)
        os.kill(first, signal.SIGKILL)
        done_before_kill = trials.read_text().count("\n")  # one, or more when trials ended together
        time.sleep(0.05)
        _, stderr = cli.communicate(timeout=300)
    finally:
        if cli.poll() is None:
            cli.kill()
    records = [json.loads(line) for line in trials.read_text().splitlines()]
    assert len(records) == 6, stderr[-3000:]
    assert "local server died; restarting" in stderr
    for record in records:
        assert record["outcome"] in ("ok", "infra_error"), record["error"]
        if record["outcome"] == "ok":
            assert not record["before"]["error"] and not record["after"]["error"], record
        else:
            assert record["error"], "an infrastructure error says why"
        assert record["cleanup_error"] is None, record["cleanup_error"]
    # At most CONCURRENCY (2) trials were in flight at the kill; every trial after those began on the new server.
    later = records[done_before_kill + 2 :]
    assert later, f"{done_before_kill} trials had ended before the kill: nothing ran on the restarted server"
    assert all(record["outcome"] == "ok" for record in later), [r["error"] for r in later]
    failed = [record for record in records if record["outcome"] != "ok"]
    assert cli.returncode == 0 or failed, stderr[-3000:]
    world.assert_clean(stderr)  # what the killed server left half-made, the restarted one collected
