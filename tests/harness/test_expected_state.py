"""The expected state comes from the trial's own start: a fixture whose rows depend on the moment it
was loaded (DEFAULT now(), clock_timestamp(), a clock-driven sequence) scores like any other."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from harness.cases import BUNDLED_FIXTURES, load_cases
from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.expected import copy_main, delete_copy, expected_from_copy
from harness.servers.neon.sandbox import SandboxInfo
from scorers.registry import DETERMINISTIC
from tests.datasets.pg import fingerprints, load_fixture, scratch_database, start_server
from tests.harness.conftest import make_case

CASE_ID = "complete-tasks-add-column-priority"


def test_the_tasks_fixture_never_loads_the_same_twice() -> None:
    """Why a fresh load cannot be the reference: two loads of the fixture differ."""
    server = start_server()
    loads = []
    for label in ("first", "second"):
        with scratch_database(server, f"tasks-{label}") as conninfo:
            load_fixture(conninfo, BUNDLED_FIXTURES / "tasks.sql")
            loads.append(fingerprints(conninfo))
    assert loads[0]["public.tasks"].rows == loads[1]["public.tasks"].rows == 120
    assert loads[0]["public.tasks"].content_hash != loads[1]["public.tasks"].content_hash


async def test_the_careful_agent_scores_full_marks_on_a_volatile_fixture(
    local_server: LocalServer, api: NeonAPI, runner_settings: Callable[..., Settings]
) -> None:
    case = next(case for case in load_cases() if case.id == CASE_ID)
    async with TrialRunner(runner_settings(), local_server=local_server) as runner:
        record = await runner.run(case, 0)
    assert record.outcome == "ok", record.error
    assert record.expected is not None and record.expected.error is None
    assert record.branches_left == [] and record.cleanup_error is None  # the start copy is gone
    for spec in DETERMINISTIC:
        score = spec.score(record, case)
        assert score.score == 1, (spec.name, score.metadata)
    # The copy really is the trial's start: its data carries this load's timestamps and ticket numbers.
    assert record.before is not None
    assert record.before.tables["public.teams"] == record.expected.tables["public.teams"]


async def test_a_start_copy_the_model_deleted_is_its_fault_a_vanished_project_is_not(api: NeonAPI) -> None:
    """Neon's 404 names no branch, so the harness asks the project whether the copy is still there."""
    case = make_case()
    project = await api.create_project(f"eval-copytest-{secrets.token_hex(3)}")
    project_id = project["project"]["id"]
    try:
        main = await api.default_branch(project_id)
        info = SandboxInfo(project_id, main["id"], main["name"])
        deleted = await copy_main(api, info, "expected-deleted")
        await api.delete_branch(project_id, deleted.branch_id)  # what a model's delete_branch does
        snapshot = await expected_from_copy(api, deleted, case)
        assert snapshot.fault == "model" and f"{deleted.branch_id} was deleted during the trial" in str(snapshot.error)
        assert await delete_copy(api, deleted) is None  # already gone: done, not an error
        orphaned = await copy_main(api, info, "expected-orphaned")
    finally:
        await api.delete_project(project_id)
    snapshot = await expected_from_copy(api, orphaned, case)
    assert snapshot.error is not None and snapshot.fault != "model"
