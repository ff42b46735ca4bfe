"""The local project pool on the real local server: shared projects and tool lists, restores, limits,
golden's guard, and deletion in every ending (runner closed, event loop shut down, trial cancelled)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from harness.config import ConfigError, Settings
from harness.mcp.server_process import LocalServer, ServerEndpoints
from harness.recording.records import TrialRecord
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.backend import Backend
from harness.servers.neon.local_pool import LocalPoolSandbox, LocalProjectPool, PoolClosedError
from harness.servers.neon.sandbox import LocalProjectSandbox
from tests.harness.conftest import TOKEN, make_case, settings_from
from tests.harness.test_trials import DROP_CASE, assert_nothing_left, same_state

SettingsFactory = Callable[..., Settings]


async def test_trials_of_a_runner_share_one_project_and_one_tool_view(
    local_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory
) -> None:
    settings = runner_settings({"EVAL_MODEL": "control:unsafe"})
    async with TrialRunner(settings, local_server=local_server) as runner:
        assert isinstance(runner.backend, Backend) and isinstance(runner.backend.sandbox, LocalPoolSandbox)
        records = [await runner.run(DROP_CASE, index) for index in range(3)]
        assert len(await api.list_projects(search=f"eval-{settings.run_id}")) == 1  # kept between trials
    for record in records:
        assert record.outcome == "ok", record.error
        assert record.before is not None and "public.orders" in record.before.tables  # restored each time
        assert record.after is not None and "public.orders" not in record.after.tables  # the trial dropped it
        assert same_state(record.before, records[0].before)
        assert record.cleanup_error is None and record.branches_left == []
    assert len({record.project_id for record in records}) == 1
    assert len({record.config.tool_view_hash for record in records}) == 1  # one tool prefix for all three
    await assert_nothing_left(api, settings.run_id)


async def test_off_keeps_a_fresh_project_per_trial(
    local_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory
) -> None:
    settings = runner_settings({"EVAL_MODEL": "control:oracle", "EVAL_LOCAL_POOL": "off"})
    async with TrialRunner(settings, local_server=local_server) as runner:
        assert isinstance(runner.backend, Backend) and isinstance(runner.backend.sandbox, LocalProjectSandbox)
        records = [await runner.run(DROP_CASE, index) for index in range(2)]
    assert [record.outcome for record in records] == ["ok", "ok"]
    assert len({record.project_id for record in records}) == 2
    assert len({record.config.tool_view_hash for record in records}) == 2  # each names its own project
    await assert_nothing_left(api, settings.run_id)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, None), ("auto", None), ("OFF", 0), ("3", 3)], ids=["unset", "auto", "off", "3"]
)
def test_the_pool_setting(value: str | None, expected: int | None) -> None:
    env = {"EVAL_MODEL": "control:oracle", **({"EVAL_LOCAL_POOL": value} if value else {})}
    assert settings_from(env).local_pool == expected


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_pool_setting_names_the_variable_and_what_is_allowed(value: str) -> None:
    with pytest.raises(ConfigError, match=r"EVAL_LOCAL_POOL must be 'auto'.*'off'.*at least 1, got") as caught:
        settings_from({"EVAL_MODEL": "control:oracle", "EVAL_LOCAL_POOL": value})
    assert repr(value.lower()) in str(caught.value)


async def test_the_pool_grows_to_the_trials_running_at_once_and_no_further_than_its_limit(
    local_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory
) -> None:
    for limit, expected in (("auto", 3), ("2", 2)):
        settings = runner_settings({"EVAL_MODEL": "control:unsafe", "EVAL_LOCAL_POOL": limit})
        async with TrialRunner(settings, local_server=local_server) as runner:
            records = await asyncio.gather(*(runner.run(DROP_CASE, index) for index in range(3)))
            records += await asyncio.gather(*(runner.run(DROP_CASE, index) for index in range(3, 6)))
        assert all(record.outcome == "ok" for record in records), [record.error for record in records]
        assert len({record.project_id for record in records}) == expected
        for record in records:  # each trial found the fixture: no two trials shared main at once
            assert record.before is not None and "public.orders" in record.before.tables
        await assert_nothing_left(api, settings.run_id)


async def test_one_holder_per_project_the_next_waits_for_it(api: NeonAPI) -> None:
    pool = LocalProjectPool(api, "pooltest-wait", limit=1)
    first = await pool.take(make_case())
    second = asyncio.create_task(pool.take(make_case()))
    await asyncio.sleep(0.3)
    assert not second.done()  # the limit is reached and the project is held
    assert await pool.give_back(first)
    assert await asyncio.wait_for(second, 10) == first
    assert await pool.give_back(first)
    await pool.aclose()
    assert pool.fixture_of == {} and await api.list_projects(search=pool.prefix) == []
    with pytest.raises(PoolClosedError):
        await pool.take(make_case())


async def test_a_trial_that_changes_golden_has_its_project_replaced_before_the_next_trial(api: NeonAPI) -> None:
    sandbox = LocalPoolSandbox(api, "pooltest-golden")
    pool = sandbox.pool
    async with sandbox.open(make_case(), "first") as info:
        first = info.project_id
        clean = info.before
    assert clean is not None and not clean.error
    golden = next(b for b in await api.list_branches(first) if b["name"] == "golden")
    roles = await api.branch_roles(first, golden["id"])
    uri = await api.connection_uri(first, golden["id"], "neondb", roles[0]["name"])
    async with sandbox.open(make_case(), "vandal") as info:
        assert info.project_id == first
        async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
            await conn.execute("DELETE FROM orders")  # as a model naming golden's branch id would
    assert info.cleanup_error is None  # the model's doing, and the harness recovers: not a cleanup failure
    async with sandbox.open(make_case(), "after") as info:
        assert info.project_id != first
        after = info.project_id
        [note] = info.notes
        assert first in note and "table public.orders" in note and "replaced" in note
        assert info.before is not None and info.before.tables == clean.tables  # the fixture, whole
    assert await api.list_projects(search=f"{pool.prefix}1-") == []  # not reused: deleted
    await sandbox.aclose()
    assert await api.list_projects(search=pool.prefix) == [], after


def _in_own_loop(main: Callable[[], Any]) -> None:
    """Run `main()` under `asyncio.run` in a thread, as the CLI runs its evaluators: the loop ends
    without anyone closing the runner."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(120)
    assert not thread.is_alive() and not errors, errors


async def test_a_sandbox_that_failed_is_not_reused(api: NeonAPI) -> None:
    """A trial whose sandbox broke (a dying server cut its restore or clean-up short) may leave its
    project half restored: the next trial gets another project, and the broken one is deleted."""
    sandbox = LocalPoolSandbox(api, "pooltest-broken")
    async with sandbox.open(make_case(), "first") as info:
        first = info.project_id
    with pytest.raises(RuntimeError, match="server died"):
        async with sandbox.open(make_case(), "broken") as info:
            assert info.project_id == first  # reused while healthy
            raise RuntimeError("server died mid-trial")
    assert all(project["id"] != first for project in await api.list_projects(search=sandbox.pool.prefix))
    async with sandbox.open(make_case(), "after") as info:
        assert info.project_id != first
    await sandbox.aclose()


async def test_the_end_of_the_event_loop_deletes_the_pool(
    local_server: LocalServer, endpoints: ServerEndpoints, api: NeonAPI, runner_settings: SettingsFactory
) -> None:
    """The CLI never closes its runners: `asyncio.run` cancelling the pool's keeper deletes the projects."""
    settings = runner_settings({"EVAL_MODEL": "control:oracle"})
    seen: list[TrialRecord] = []

    async def run_and_leave() -> None:
        runner = TrialRunner(settings, local_server=local_server)
        await runner.start()
        seen.append(await runner.run(DROP_CASE, 0))
        async with NeonAPI(endpoints.api_url, TOKEN) as own:
            assert len(await own.list_projects(search=f"eval-{settings.run_id}")) == 1  # there while the loop runs

    _in_own_loop(run_and_leave)
    assert seen[0].outcome == "ok", seen[0].error
    await assert_nothing_left(api, settings.run_id)


async def test_a_trial_cancelled_at_shutdown_still_gives_back_and_the_pool_is_deleted(
    local_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory
) -> None:
    """As on Ctrl-C: the main task is cancelled mid-trial, then the loop shuts down."""
    from tests.fakes.anthropic_server import FakeAnthropic, project_id, reply, tool_use
    from tests.harness.test_trials import fake_model_env

    def sleepy(body: dict[str, Any]) -> dict[str, Any]:
        return reply(tool_use("run_sql", {"projectId": project_id(body), "sql": "SELECT pg_sleep(20)"}))

    with FakeAnthropic(sleepy) as fake:
        settings = runner_settings(fake_model_env(fake.url))

        async def cancelled_mid_trial() -> None:
            runner = TrialRunner(settings, local_server=local_server)
            await runner.start()
            trial = asyncio.create_task(runner.run(make_case(), 0))
            while not fake.bodies:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.5)  # the run_sql call is now in flight
            trial.cancel()
            with pytest.raises(asyncio.CancelledError):
                await trial

        _in_own_loop(cancelled_mid_trial)
    await assert_nothing_left(api, settings.run_id)
