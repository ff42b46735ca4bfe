"""A run killed outright (SIGKILL: no cleanup at all) leaves projects; its local server, which
watches its parent, stops by itself within seconds; `make janitor` finds the rest, whatever its age,
and removes it."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.evals.cli import python_module, run_in_repo
from tests.faults.conftest import EVAL_FILE, World, fault_env, processes_of, start_job, wait_for_records


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


def test_the_janitor_removes_everything_a_killed_run_left(
    world: World, dataset: Path, tmp_path: Path, stray_processes: None
) -> None:
    results = tmp_path / "results"
    env = fault_env(world, results, dataset, EVAL_TRIALS="4", EVAL_CONCURRENCY="2", EVAL_MODEL="control:oracle")
    command = [str(Path(sys.executable).parent / "braintrust"), "eval", "--no-send-logs", "--no-progress-bars"]
    cli = start_job([*command, EVAL_FILE], env)
    try:
        wait_for_records(cli, results / world.run_id / "trials.jsonl", 1)
        os.killpg(cli.pid, signal.SIGKILL)
    finally:
        cli.wait(30)
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
