"""The Neon pool sandbox and the janitor against the local server; the shared runner; the store; capture errors."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from harness.clock import fixed
from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import ResultsStore, load_run
from harness.run.shared import close_shared_runners, run_trial, shared_runner
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.backend import Backend
from harness.servers.neon.janitor import main as janitor_main
from harness.servers.neon.janitor import parse_age, sweep
from harness.servers.neon.sandbox import NeonPoolSandbox, execute_script
from harness.servers.neon.state import capture
from tests.harness.conftest import FIXTURES, make_case
from tests.harness.test_trials import DROP_CASE

SettingsFactory = Callable[..., Settings]


@pytest.fixture
async def pool_project(api: NeonAPI) -> AsyncIterator[tuple[str, str, str]]:
    """A dedicated project laid out as recommended: golden (root, fixture) -> main (default); keep-me from golden."""
    body = await api.create_project(f"pool-test-{secrets.token_hex(3)}", branch={"name": "golden"})
    project_id, golden = body["project"]["id"], body["branch"]
    assert golden["name"] == "golden"
    role = body["roles"][0]["name"]
    uri = await api.connection_uri(project_id, golden["id"], "neondb", role)
    await execute_script(uri, (FIXTURES / "shop.sql").read_text(encoding="utf-8"), transaction=True)
    main = (await api.create_branch(project_id, parent_id=golden["id"], name="main", expires_in=None))["branch"]
    await api.set_default_branch(project_id, main["id"])
    keep = (await api.create_branch(project_id, parent_id=golden["id"], name="keep-me", expires_in=None))["branch"]
    yield project_id, golden["id"], keep["id"]
    await api.delete_project(project_id)


async def test_pool_restores_main_and_deletes_only_trial_branches(
    local_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory, pool_project: tuple[str, str, str]
) -> None:
    project_id, golden_id, keep_id = pool_project
    records = []
    for model, case in (("control:unsafe", DROP_CASE), ("control:oracle", DROP_CASE), ("control:oracle", make_case())):
        async with TrialRunner(runner_settings({"EVAL_MODEL": model}), local_server=local_server) as runner:
            assert isinstance(runner.backend, Backend)  # Neon's family: its sandbox can be swapped for a pool's
            runner.backend.sandbox = NeonPoolSandbox(runner.backend.api, [project_id], "golden")
            records.append(await runner.run(case, 0))
    dropped, prepared, approved = records
    for record in records:
        assert record.outcome == "ok", record.error
        assert record.project_id == project_id and record.cleanup_error is None
        assert record.before and "public.orders" in record.before.tables  # main restored before every trial
    assert dropped.after and "public.orders" not in dropped.after.tables
    assert prepared.branches_left and prepared.branches_left[0].startswith("mcp-migration-")
    assert approved.after and approved.expected and approved.after.tables == approved.expected.tables
    remaining = {b["id"] for b in await api.list_branches(project_id)}
    assert remaining == {approved.default_branch_id, golden_id, keep_id}
    # A crashed trial's branch off main would block the restore: the next trial removes it first.
    assert approved.default_branch_id is not None
    await api.create_branch(project_id, parent_id=approved.default_branch_id, name="mcp-migration-crashed")
    sandbox = NeonPoolSandbox(api, [project_id], "golden")
    async with sandbox.open(make_case(), "after-crash") as info:
        assert info.branch_id == approved.default_branch_id
    remaining = {b["id"] for b in await api.list_branches(project_id)}
    assert remaining == {approved.default_branch_id, golden_id, keep_id}


async def test_janitor_deletes_old_marked_projects_and_replay_branches_only(
    api: NeonAPI, pool_project: tuple[str, str, str]
) -> None:
    project_id, golden_id, keep_id = pool_project
    run_id = f"janitor-{secrets.token_hex(3)}"
    leftover = (await api.create_project(f"eval-{run_id}-crashed"))["project"]["id"]
    unrecorded = (await api.create_project(f"eval-other{run_id}-crashed"))["project"]["id"]
    other = (await api.create_project(f"notours-{secrets.token_hex(3)}"))["project"]["id"]
    replay = (await api.create_branch(project_id, parent_id=golden_id, name=f"eval-expected-{run_id}-x"))["branch"]
    runs = (run_id,)
    try:
        # A fixed clock half an hour, then two hours, after the newest leftover was made.
        created = max(str(item["created_at"]) for item in (await api.get_project(leftover), replay))
        made = datetime.fromisoformat(created.replace("Z", "+00:00"))
        hour = timedelta(hours=1)
        young = await sweep(api, older_than=hour, run_ids=runs, pool=(project_id,), clock=fixed(made + hour / 2))
        assert young.projects == [] and young.branches == []
        later = fixed(made + 2 * hour)
        dry = await sweep(api, older_than=hour, run_ids=runs, pool=(project_id,), dry_run=True, clock=later)
        assert dry.projects == [leftover] and len(dry.branches) == 1 and replay["id"] in dry.branches[0]
        assert any(unrecorded in spared for spared in dry.spared)
        assert await api.get_project(leftover)
        done = await sweep(api, older_than=hour, run_ids=runs, pool=(project_id,), clock=later)
        assert done.projects == [leftover] and done.errors == []
        assert [p["id"] for p in await api.list_projects(search=f"eval-{run_id}")] == []
        remaining = {b["id"] for b in await api.list_branches(project_id)}
        assert {golden_id, keep_id} < remaining and replay["id"] not in remaining and len(remaining) == 3
        assert (await api.get_project(other))["id"] == other
        assert (await api.get_project(unrecorded))["id"] == unrecorded
    finally:
        for project in (other, leftover, unrecorded):
            await api.delete_project(project)


def test_janitor_cli_parses_ages_and_runs_dry(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parse_age("90s") == timedelta(seconds=90) and parse_age("2d") == timedelta(days=2)
    monkeypatch.setenv("EVAL_MODEL", "control:oracle")
    monkeypatch.setenv("EVAL_SERVER", "local")
    assert janitor_main(["--older-than", "30d", "--dry-run", "--run-id", "none-such"]) == 0
    assert "would delete 0 project(s)" in capsys.readouterr().out


async def test_shared_runner_is_one_per_loop_and_closes(runner_settings: SettingsFactory) -> None:
    settings = runner_settings()
    first, second = await asyncio.gather(shared_runner(settings), shared_runner(settings))
    assert first is second and first.server is not None and first.server.process is not None
    read_case = make_case(
        id="read-tables",
        scenario="tool_selection",
        follow_ups=[],
        approval="none",
        expected_main="unchanged",
        reference_sql=None,
        required_tools=[],
        reference_calls=[{"tool": "get_database_tables", "arguments": {"projectId": "{project_id}"}}],
    )
    record = await run_trial(read_case, 0, settings)
    assert record.outcome == "ok" and [c.name for c in record.tool_calls] == ["get_database_tables"]
    assert "customers" in record.final_answer
    server = first.server
    other_settings = runner_settings({"EVAL_MODEL": "control:unsafe"})
    other = await shared_runner(other_settings)
    assert other is not first and other.server is server  # one local server per process
    assert server.process is not None
    server.process.kill()  # a crashed server is restarted by the next trial...
    server.process.wait()
    again = await run_trial(read_case, 1, settings)
    assert again.outcome == "ok", again.error
    followed = await run_trial(read_case, 2, other_settings)  # ...and the other runner follows it to its new port
    assert followed.outcome == "ok", followed.error
    await close_shared_runners()
    assert server.process is None
    assert (await shared_runner(settings)) is not first
    await close_shared_runners()


async def test_capture_failure_is_recorded_not_raised(api: NeonAPI) -> None:
    snapshot = await capture(api, "no-such-project-00000000", "br-none", "neondb", "nobody")
    assert snapshot.error and "schema" in snapshot.error and "data" in snapshot.error
    assert snapshot.schema_sql is None and snapshot.tables == {}


def test_store_lines_stay_whole_under_concurrent_writers(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path, "run-1")
    big = "x" * 20_000

    def write(worker: int) -> None:
        for index in range(40):
            store.append(
                TrialRecord(
                    case_id=f"c{worker}",
                    trial_index=index,
                    final_answer=big,
                    config=TrialConfig(model="control:oracle", server="local"),
                )
            )

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _, records = load_run(store.trials_path)
    assert len(records) == 240 and all(r.final_answer == big for r in records)
