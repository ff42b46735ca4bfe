"""SIGTERM (what `timeout`, CI cancellation and `docker stop` send) gets Ctrl-C's cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.faults.conftest import World, launch_in_full_swing


def test_sigterm_to_the_process_group_cleans_up_like_ctrl_c(
    world: World, dataset: Path, tmp_path: Path, reaped: list[subprocess.Popen[str]]
) -> None:
    """`timeout` signals the whole group: launcher and CLI both get SIGTERM."""
    results = tmp_path / "results"
    # 40 trials, the signal after the first: room for this test to be held back on a loaded machine.
    launcher = launch_in_full_swing(world, dataset, results, reaped, 1, EVAL_TRIALS="20", EVAL_CONCURRENCY="2")
    os.killpg(launcher.pid, signal.SIGTERM)
    _, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 143, stderr[-3000:]
    assert "SIGTERM: stopping as on Ctrl-C" in stderr
    finished = (results / world.run_id / "trials.jsonl").read_text().count("\n")
    assert finished < 40, "the run was not stopped"
    # A branch clone cut off by the server's stop is collected by the server as it stops.
    world.assert_clean(stderr)


@pytest.mark.long  # the launcher forwarding SIGTERM; the test above sends it to the group
def test_sigterm_to_the_launcher_alone_reaches_the_run(
    world: World, dataset: Path, tmp_path: Path, reaped: list[subprocess.Popen[str]]
) -> None:
    """`docker stop` signals only the main process: the launcher forwards it and waits."""
    results = tmp_path / "results"
    # 40 trials, the signal after the first: room for this test to be held back on a loaded machine.
    launcher = launch_in_full_swing(world, dataset, results, reaped, 1, EVAL_TRIALS="20", EVAL_CONCURRENCY="2")
    launcher.send_signal(signal.SIGTERM)
    _, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 143, stderr[-3000:]
    assert "evals: SIGTERM; waiting for the run to clean up" in stderr
    world.assert_clean(stderr)
