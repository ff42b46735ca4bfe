"""Both server styles (wrapped `params` and flat) and both transports (Streamable HTTP and stdio) look the same."""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator, Callable

import pytest

from harness.config import Settings
from harness.mcp.client import connect
from harness.mcp.server_process import LocalServer
from harness.mcp.toolview import ToolView
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from tests.harness.conftest import make_case
from tests.harness.test_trials import assert_nothing_left

SettingsFactory = Callable[..., Settings]


@pytest.fixture(scope="module")
async def flat_server() -> AsyncIterator[LocalServer]:
    server = LocalServer(token="flat-token-1234", flat_params=True)
    await server.start()
    yield server
    server.stop()


async def test_wrapped_and_flat_servers_show_the_model_the_same_tools(
    local_server: LocalServer, flat_server: LocalServer
) -> None:
    views = []
    for server in (local_server, flat_server):
        assert server.endpoints is not None
        async with connect(server.endpoints.mcp_url, {"Authorization": f"Bearer {server.token}"}) as connection:
            tools = await connection.list_tools()
            views.append(ToolView(tools))
    wrapped, flat = views
    assert all(t.wrapped for t in wrapped.server_tools.values())
    assert not any(t.wrapped for t in flat.server_tools.values())
    differing = [a.name for a, b in zip(wrapped.tools, flat.tools, strict=True) if a != b]
    assert wrapped.hash == flat.hash, f"tools shown differently: {differing}"


async def test_oracle_trial_on_the_flat_server(
    flat_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory
) -> None:
    settings = runner_settings()
    async with TrialRunner(settings, local_server=flat_server) as runner:
        record = await runner.run(make_case(), 0)
    assert record.outcome == "ok", record.error
    assert record.after and record.expected and record.after.tables == record.expected.tables
    await assert_nothing_left(api, settings.run_id)


async def test_stdio_server_command(local_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory) -> None:
    settings = runner_settings({"EVAL_SERVER": shlex.join([sys.executable, "-m", "localneon", "--transport", "stdio"])})
    assert settings.server_kind == "stdio"
    async with TrialRunner(settings, local_server=local_server) as runner:
        record = await runner.run(make_case(id="unsafe-stdio"), 0)
    assert record.outcome == "ok", record.error
    assert record.config.server.endswith("--transport stdio")
    assert record.after and record.expected and record.after.tables == record.expected.tables
    await assert_nothing_left(api, settings.run_id)
