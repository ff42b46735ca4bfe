"""A run killed outright (SIGKILL: no cleanup at all) leaves projects; its local server, which
watches its parent, stops by itself within seconds; `make janitor` finds the rest, whatever its age,
and removes it. The launcher (`python -m evals`, what `make eval` runs) says the run was killed, and
how far it got, instead of pointing at its records as if it had finished."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.evals.cli import python_module, run_in_repo
from tests.faults.conftest import World, fault_env, launch_in_full_swing, processes_of


@pytest.fixture
def stray_processes(world: World) -> Iterator[None]:
    """Whatever the killed run started dies with the test, even when an assertion fails first."""
    yield
    for line in processes_of(world.tmp):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)


def settled_projects(world: World, quiet: float = 1.5, timeout: float = 30) -> list[str]:
    """The run's projects once the orphaned server has finished what the killed run had asked of it.

    A delete request sent just before the kill still completes on the server; until then a project
    may be listed that the janitor will rightly never see."""
    deadline = time.monotonic() + timeout
    seen, since = world.projects(), time.monotonic()
    while time.monotonic() - since < quiet and time.monotonic() < deadline:
        time.sleep(0.1)
        now = world.projects()
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


def eval_child(launcher: subprocess.Popen[str], timeout: float = 30) -> int:
    """The pid of the `braintrust eval` process the launcher started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the command's name
            if parent == launcher.pid and any(part.endswith(b"braintrust") for part in command) and b"eval" in command:
                return int(entry.name)
        time.sleep(0.1)
    raise AssertionError(f"no braintrust eval child of {launcher.pid}")


def test_the_janitor_removes_everything_a_killed_run_left(
    world: World, dataset: Path, tmp_path: Path, reaped: list[subprocess.Popen[str]], stray_processes: None
) -> None:
    results = tmp_path / "results"
    # 40 trials, the kill after the first: room for this test to be held back on a loaded machine.
    launcher = launch_in_full_swing(world, dataset, results, reaped, 1, EVAL_TRIALS="20", EVAL_CONCURRENCY="2")
    os.kill(eval_child(launcher), signal.SIGKILL)  # the eval process alone, as the OOM killer or `kill -9` does
    _, stderr = launcher.communicate(timeout=60)
    env = fault_env(world, results, dataset, EVAL_MODEL="control:oracle")

    # The launcher says what ended the run and how far it got, and exits 128 + SIGKILL (137), as a shell does.
    assert launcher.returncode == 128 + signal.SIGKILL, f"exit {launcher.returncode}:\n{stderr[-3000:]}"
    assert "evals: records in" not in stderr and "evals: report:" not in stderr, stderr[-3000:]
    recorded = (results / world.run_id / "trials.jsonl").read_text().count("\n")
    said = next(line for line in stderr.splitlines() if "was killed by" in line)
    assert said.startswith("evals: the eval process (braintrust eval, pid "), said
    assert "was killed by SIGKILL before it finished; " in said, said
    assert f"{recorded} of 40 planned trials were recorded in " in said, said  # 2 cases x 20 trials
    assert f"{world.run_id}/trials.jsonl" in said and "(exit 137)" in said and "make janitor" in said, said
    left = {**world.leftovers(), "projects": settled_projects(world)}
    deadline = time.monotonic() + 15
    while any("-m localneon" in line for line in processes_of(world.tmp)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any("-m localneon" in line for line in processes_of(world.tmp)), "the orphaned server kept running"

    janitor = run_in_repo(python_module("harness.servers.neon.janitor"), env, timeout=300)
    assert janitor.returncode == 0, janitor.stderr[-3000:]
    if left["projects"]:  # the kill may land while no trial holds a sandbox (between two trials)
        assert "deleted project " in janitor.stdout, janitor.stdout
    world.assert_clean(janitor.stdout + janitor.stderr)
