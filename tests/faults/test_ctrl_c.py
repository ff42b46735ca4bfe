"""Ctrl-C pressed once, twice or three times at concurrency 8: the run stops with 130 and leaves
nothing, neither what the catalog lists nor a database or role it never heard of.

A terminal sends SIGINT to the whole foreground process group (launcher and CLI; the local server
runs in its own session). The first press cancels the trials in flight; the later ones land while
their sandboxes are being deleted, which must still finish.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.conftest import World, launch_in_full_swing


# In `make test-long`, one press and the second and third (the forced stops). `make test` interrupts a
# run by SIGTERM to its group (test_signals.py), which takes the same cleanup path as one press.
@pytest.mark.long
@pytest.mark.parametrize("presses", [1, 2, 3])
def test_ctrl_c_at_concurrency_8_leaves_nothing(
    world: World, dataset: Path, tmp_path: Path, reaped: list[subprocess.Popen[str]], presses: int
) -> None:
    results = tmp_path / "results"
    # 80 trials, of which the press lands after the second: a loaded machine may hold this test back for
    # seconds while the run goes on, and a run that ended first would have nothing left to stop.
    launcher = launch_in_full_swing(world, dataset, results, reaped, 2, EVAL_TRIALS="40", EVAL_CONCURRENCY="8")
    for press in range(presses):
        if launcher.poll() is not None:
            break
        os.killpg(launcher.pid, signal.SIGINT)
        if press + 1 < presses:
            time.sleep(0.3)  # mid-cleanup, as an impatient user presses again
    _, stderr = launcher.communicate(timeout=180)
    assert launcher.returncode == 130, stderr[-3000:]
    finished = (results / world.run_id / "trials.jsonl").read_text().count("\n")
    assert finished < 80, "the run was not stopped"
    world.assert_clean(stderr)


def test_the_runs_a_test_starts_take_ctrl_c_even_when_the_suite_is_a_background_job() -> None:
    """A background job starts with SIGINT ignored, and its children inherit that (tests/conftest.py):
    the runs above must still get Python's Ctrl-C handler."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert shown.stdout.strip() == "True", shown.stdout
