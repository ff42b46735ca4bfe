"""A server under test that crashes, hangs or never answers: the trial is the server's failure
(`infra_error`, with the reason), never the model's, and it ends within `EVAL_TRIAL_TIMEOUT`.

Each fault is real: `tests/faults/mcp_fault_server.py`, a stdio MCP server over the mcp SDK, run
as the server under test (`EVAL_SERVER=<command>`), beside the local server that makes sandboxes.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from harness.cases import Case
from harness.config import Settings
from harness.mcp.client import ServerFault, client_info, connect
from harness.mcp.server_process import LocalServer
from harness.run.trial import TrialRunner
from tests.evals.cli import run_cli
from tests.faults.conftest import EVAL_FILE, FAULTS_PGDATA, World, fault_env
from tests.harness.conftest import make_case

FAULT_SERVER = Path(__file__).with_name("mcp_fault_server.py")
TRIAL_TIMEOUT = 15.0  # room for a Python stdio server to start on a busy machine
CASE: Case = make_case()


def stdio_command(command: str) -> StdioServerParameters:
    """A command line as stdio server parameters (the fault server needs no environment of ours)."""
    parts = shlex.split(command)
    return StdioServerParameters(command=parts[0], args=parts[1:])


def fault_command(mode: str, *args: str) -> str:
    return shlex.join([sys.executable, str(FAULT_SERVER), mode, *args])


def settings_for(mode: str, results: Path, *args: str, **extra: str) -> Settings:
    env = {
        "EVAL_MODEL": "control:oracle",
        "EVAL_SERVER": fault_command(mode, *args),
        "EVAL_RESULTS_DIR": str(results),
        "EVAL_TRIAL_TIMEOUT": str(TRIAL_TIMEOUT),
        **extra,
    }
    return Settings.from_env(env=env, dotenv_path=None, warn=False)


@pytest.fixture(scope="module")
async def sandbox_server() -> AsyncIterator[LocalServer]:
    """The local server that makes each trial's sandbox (its MCP side is not the server under test)."""
    server = LocalServer(token="fault-sandbox-token", env={"LOCALNEON_PGDATA": str(FAULTS_PGDATA)})
    await server.start()
    yield server
    server.stop()


async def test_a_server_that_dies_after_listing_its_tools_is_an_infra_error(
    sandbox_server: LocalServer, tmp_path: Path
) -> None:
    async with TrialRunner(settings_for("die-after-list", tmp_path), local_server=sandbox_server) as runner:
        record = await runner.run(CASE, 0)
    assert record.outcome == "infra_error", (record.outcome, record.error)
    assert record.error and "prepare_database_migration" in record.error and "closed" in record.error.lower()


async def test_a_server_that_fails_at_start_up_is_an_infra_error(sandbox_server: LocalServer, tmp_path: Path) -> None:
    async with TrialRunner(settings_for("die-at-start", tmp_path), local_server=sandbox_server) as runner:
        record = await runner.run(CASE, 0)
    assert record.outcome == "infra_error", (record.outcome, record.error)
    assert record.error and "initialize" in record.error and "closed" in record.error.lower(), record.error


async def test_a_server_that_hangs_on_tools_call_is_an_infra_error_within_the_trial_timeout(
    sandbox_server: LocalServer, tmp_path: Path
) -> None:
    async with TrialRunner(settings_for("hang-call", tmp_path), local_server=sandbox_server) as runner:
        started = time.monotonic()
        record = await runner.run(CASE, 0)
        took = time.monotonic() - started
    assert record.outcome == "infra_error", (record.outcome, record.error)
    assert record.error and "did not answer tools/call prepare_database_migration" in record.error
    assert "EVAL_TRIAL_TIMEOUT" in record.error
    assert took < TRIAL_TIMEOUT + 20, took  # sandbox open and close come on top of the bounded part


@pytest.mark.long  # waits out two timeouts; the hang tests above wait out one
async def test_two_trials_on_a_server_that_never_answers_initialize_take_about_twice_the_timeout(
    sandbox_server: LocalServer, tmp_path: Path
) -> None:
    async with TrialRunner(settings_for("hang-initialize", tmp_path), local_server=sandbox_server) as runner:
        started = time.monotonic()
        records = [await runner.run(CASE, 0), await runner.run(CASE, 1)]
        took = time.monotonic() - started
    for record in records:
        assert record.outcome == "infra_error", (record.outcome, record.error)
        assert record.error and "did not answer initialize" in record.error
    assert took < 2 * TRIAL_TIMEOUT + 30, took  # was 278 s with a 5 s timeout


async def test_every_tool_call_failing_at_the_servers_api_is_an_infra_error(
    sandbox_server: LocalServer, tmp_path: Path, not_found_api: str
) -> None:
    settings = settings_for("api-404", tmp_path, not_found_api)
    async with TrialRunner(settings, local_server=sandbox_server) as runner:
        record = await runner.run(CASE, 0)
    assert record.outcome == "infra_error", (record.outcome, record.error)
    assert record.error and "every tool call failed at the server" in record.error
    assert "status code 404" in record.error


async def test_a_wrong_token_names_the_401_and_the_servers_message(sandbox_server: LocalServer) -> None:
    assert sandbox_server.endpoints is not None
    with pytest.raises(ServerFault) as raised:
        async with connect(sandbox_server.endpoints.mcp_url, {"Authorization": "Bearer wrong-token"}) as connection:
            await connection.list_tools()
    message = str(raised.value)
    assert "HTTP 401" in message, message
    assert "invalid bearer token" in message, message  # the server's own words
    assert "Server returned an error response" not in message


async def test_the_harness_introduces_itself_by_name_and_version() -> None:
    async with connect(stdio_command(fault_command("whoami"))) as connection:
        await connection.list_tools()
        result = await connection.call("list_projects", {})
    expected = client_info()
    assert expected.name == "mcp-migration-evals" and expected.version
    assert result.text == f"client: {expected.name} {expected.version}", result.text


@pytest.mark.long  # a whole run; the tests above meet the same faults one trial at a time
def test_a_run_whose_server_api_answers_404_to_everything_exits_non_zero_naming_it(
    world: World, dataset: Path, tmp_path: Path, not_found_api: str
) -> None:
    """Issue 16: every call failed at the server (its REST API said 404), the trials were `ok` and
    `braintrust eval` exited 0."""
    results = tmp_path / "results"
    env = fault_env(
        world,
        results,
        dataset,
        EVAL_MODEL="control:oracle",
        EVAL_SERVER=fault_command("api-404", not_found_api),
        EVAL_TRIAL_TIMEOUT=str(TRIAL_TIMEOUT),
    )
    completed = run_cli(env, EVAL_FILE, timeout=300)
    assert completed.returncode == 1, completed.stderr[-3000:]
    assert "trials were infrastructure errors" in completed.stderr, completed.stderr[-3000:]
    assert "every tool call failed at the server" in completed.stderr
    assert "status code 404" in completed.stderr
    world.assert_clean(completed.stderr)


async def test_a_call_past_its_own_timeout_is_the_servers_fault() -> None:
    """The SDK's per-request timeout (REQUEST_TIMEOUT) used to reach the model as a tool error."""
    async with connect(stdio_command(fault_command("hang-call"))) as connection:
        await connection.list_tools()
        with pytest.raises(ServerFault, match="the server failed tools/call run_sql \\(no answer\\)"):
            await connection.call("run_sql", {"sql": "SELECT 1"}, timeout=1.0)
