"""How many tools the model will see under a configuration, known before any trial runs.

Braintrust fixes an experiment's metadata when the experiment starts, before its first trial, so
the eval wiring asks once per configuration: a short MCP session lists the server's tools and
applies the same tool-view transform (filter, decoys) a trial applies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures

from harness.config import Settings
from harness.mcp.client import connect
from harness.mcp.toolview import ToolView
from harness.run.shared import shared_local_server
from harness.run.trial import TrialRunner, describe_error
from harness.servers.registry import family_for


async def count_model_tools(settings: Settings) -> int:
    """Tools a trial's model is offered under `settings`, decoys included."""
    count, _, _ = await model_tool_view(settings)
    return count


async def model_tool_view(settings: Settings) -> tuple[int, str, tuple[str, ...]]:
    """(tools offered, hash of the view before any per-trial shuffle, their names) under `settings`."""
    view = await _tool_view(settings)
    return len(view.tools), view.hash, tuple(tool.name for tool in view.tools)


async def model_tool_descriptions(settings: Settings) -> dict[str, str]:
    """Each tool the model is offered under `settings`, with the description it reads (overrides and
    the worn surface applied, decoys left out): what the tuning loop rewrites."""
    view = await _tool_view(settings.model_copy(update={"decoys": 0}))
    return {tool.name: tool.description or "" for tool in view.tools}


async def _tool_view(settings: Settings) -> ToolView:
    async with TrialRunner(settings, local_server=shared_local_server(settings), write_results=False) as runner:
        assert runner.backend is not None
        backend = runner.backend
        async with (
            backend.probe_sandbox() as sandbox,  # pinned, as every trial's session is
            asyncio.timeout(settings.trial_timeout),  # bounded like a trial's own session
        ):
            target = await backend.target_for(sandbox)
            async with connect(target, backend.mcp_headers) as connection:
                server_tools = await connection.list_tools()
        return ToolView(
            server_tools, overrides=runner.overrides, decoys=settings.decoys, name_filter=settings.tool_filter
        )


def count_model_tools_blocking(settings: Settings, timeout: float = 180.0) -> int | str:
    """The same from synchronous code, even inside a running event loop (it uses a worker thread).

    Returns the count, or a short reason why it is unknown; a server that is down is reported by the
    trials (as infrastructure errors). Only a server that refuses the key raises (`model_tool_view_blocking`).
    """
    found = model_tool_view_blocking(settings, timeout)
    return found if isinstance(found, str) else found[0]


def model_tool_view_blocking(settings: Settings, timeout: float = 180.0) -> tuple[int, str, tuple[str, ...]] | str:
    """`model_tool_view` from synchronous code; a reason string instead of raising, except for a server
    (or its REST API) that refuses the key with HTTP 401 or 403: every trial would be refused alike, so
    that raises ConfigError naming the server and its refusal, which stops the run before any trial."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(asyncio.run, model_tool_view(settings))
    try:
        return future.result(timeout=timeout)
    except (concurrent.futures.TimeoutError, TimeoutError):
        return f"unknown (no tool list within {min(timeout, settings.trial_timeout):.0f}s)"
    except Exception as error:
        refused = family_for(settings).refused_key(settings, error)
        if refused is not None:
            raise refused from None
        return f"unknown ({settings.scrub(describe_error(error))})"
    finally:
        pool.shutdown(wait=False)
