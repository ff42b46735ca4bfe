"""How many tools the model will see under a configuration, known before any trial runs.

Braintrust fixes an experiment's metadata when the experiment starts, before its first trial, so
the eval wiring asks once per configuration: a short MCP session lists the server's tools and
applies the same tool-view transform (filter, decoys) a trial applies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TypeVar, cast

from harness.config import Settings
from harness.mcp.client import ServerTool, connect
from harness.mcp.toolview import ToolView, parameter_key
from harness.run.shared import shared_local_server
from harness.run.trial import TrialRunner, describe_error
from harness.servers.registry import family_for

T = TypeVar("T")


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
    the worn surface applied, decoys left out), and each described parameter's words under
    `<tool>.<parameter>`: what the tuning loop rewrites (a variant file's keys)."""
    view = await _tool_view(settings.model_copy(update={"decoys": 0}))
    described: dict[str, str] = {}
    for tool in view.tools:
        described[tool.name] = tool.description or ""
        for name, spec in (tool.input_schema.get("properties") or {}).items():
            if isinstance(spec, dict) and isinstance(spec.get("description"), str) and spec["description"]:
                described[parameter_key(tool.name, name)] = spec["description"]
    return described


SANDBOX_PLACEHOLDER = "{sandbox_id}"
MAIN_PLACEHOLDER = "{main_id}"


async def server_tools(settings: Settings) -> list[ServerTool]:
    """Every tool the server under `settings` lists to a trial's session, as it lists it (name,
    description, input schema, annotations; no override, filter or decoy): what the watch on a
    server's own changes keeps and compares (`tuning.watch`). A session is pinned to its sandbox, and
    a server may name it in its words (the twin's and Neon's project-scope notice): the sandbox's and
    its main's ids are written as `{sandbox_id}` and `{main_id}`, so two listings differ only where
    the server changed."""
    tools, _, ids = await _listed(settings)
    return [
        replace(
            tool,
            description=_placeheld(tool.description, ids),
            input_schema=_placeheld(tool.input_schema, ids),
            flat_schema=_placeheld(tool.flat_schema, ids),
            annotations=_placeheld(tool.annotations, ids),
        )
        for tool in tools
    ]


def _placeheld(value: T, ids: Mapping[str, str]) -> T:
    """`value` with every id in `ids` replaced by its placeholder, in every string it holds."""
    found: Any = value
    if isinstance(found, str):
        for given, placeholder in ids.items():
            found = found.replace(given, placeholder)
    elif isinstance(found, dict):
        found = {key: _placeheld(item, ids) for key, item in found.items()}
    elif isinstance(found, list):
        found = [_placeheld(item, ids) for item in found]
    return cast(T, found)


async def _listed(settings: Settings) -> tuple[list[ServerTool], dict[str, str] | None, dict[str, str]]:
    """The server's tools for a session pinned as a trial's is, the run's description overrides, and
    the session's sandbox and main ids with their placeholders."""
    async with TrialRunner(settings, local_server=shared_local_server(settings), write_results=False) as runner:
        assert runner.backend is not None
        backend = runner.backend
        async with (
            backend.probe_sandbox() as sandbox,  # pinned, as every trial's session is
            asyncio.timeout(settings.trial_timeout),  # bounded like a trial's own session
        ):
            target = await backend.target_for(sandbox)
            named = {sandbox.sandbox_id: SANDBOX_PLACEHOLDER, sandbox.main_id: MAIN_PLACEHOLDER}
            ids = {given: placeholder for given, placeholder in named.items() if len(given) >= 4}
            async with connect(target, backend.mcp_headers) as connection:
                return await connection.list_tools(), runner.overrides, ids


async def _tool_view(settings: Settings) -> ToolView:
    server_tools, overrides, _ = await _listed(settings)
    return ToolView(server_tools, overrides=overrides, decoys=settings.decoys, name_filter=settings.tool_filter)


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
