"""The process-wide trial runner that Braintrust tasks share.

`braintrust eval` calls the task once per case and trial, concurrently, in one event loop, and may
run several evaluators (models, scenarios) at once. They all share one local server, and one runner
per event loop and configuration, created lazily inside the running loop under a lock, so that
concurrent first calls start exactly one of each. `Eval()` outside the CLI runs its own
`asyncio.run()` per call, so a runner left behind by a finished loop is discarded when another loop
asks, and every server process is stopped at interpreter exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from datetime import UTC, datetime
from typing import Any

from harness import environment
from harness.cases import Case
from harness.config import ConfigError, Settings
from harness.mcp.server_process import LocalServer
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import ResultsStore
from harness.run import disk
from harness.run.trial import TrialRunner, describe_error
from harness.servers.registry import family_for

_SHARED: dict[tuple[asyncio.AbstractEventLoop, str], TrialRunner] = {}
_SHARED_SERVER: list[LocalServer] = []  # one local server per process, shared by every shared runner
_SHARED_LOCKS: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
_ENV_SETTINGS: list[Settings] = []


def _settings_key(settings: Settings | None) -> str:
    return "" if settings is None else settings.model_dump_json()


def _purge_dead_loops() -> None:
    for key in [key for key in _SHARED if key[0].is_closed()]:
        _SHARED.pop(key)
    for loop in [loop for loop in _SHARED_LOCKS if loop.is_closed()]:
        _SHARED_LOCKS.pop(loop)


def shared_local_server(settings: Settings) -> LocalServer | None:
    """The process's one local server (not started yet, or running), for settings that use one."""
    if not settings.uses_local_server:
        return None
    if not _SHARED_SERVER:
        _SHARED_SERVER.append(LocalServer(token=secrets.token_urlsafe(24), descriptions=settings.server_descriptions))
    return _SHARED_SERVER[0]


async def shared_runner(settings: Settings | None = None) -> TrialRunner:
    """The process's runner for the running event loop, started on first use.

    Without `settings`, the environment is read once per process (one run id for the whole run).
    """
    loop = asyncio.get_running_loop()
    _purge_dead_loops()
    lock = _SHARED_LOCKS.setdefault(loop, asyncio.Lock())
    key = (loop, _settings_key(settings))
    async with lock:
        runner = _SHARED.get(key)
        if runner is None:
            chosen = settings or shared_settings()
            runner = TrialRunner(chosen, local_server=shared_local_server(chosen))
            await runner.start()  # raises before caching: the next trial tries again
            _SHARED[key] = runner
    return runner


async def run_trial(
    case: Case, trial_index: int = 0, settings: Settings | None = None, queue_s: float = 0.0
) -> TrialRecord:
    """Run one trial on the shared runner: what a Braintrust task calls.

    A configuration error raises (the run cannot mean anything); a runner that cannot start (the
    server, the API) gives an `infra_error` record, like any other infrastructure failure.
    """
    try:
        runner = await shared_runner(settings)
    except ConfigError:
        raise
    except Exception as error:
        chosen = settings or shared_settings()
        record = TrialRecord(
            case_id=case.id,
            trial_index=trial_index,
            case_hash=case.content_hash(),
            config=TrialConfig(
                model=chosen.model,
                server=chosen.scrub(chosen.server),
                server_family=family_for(chosen).name,
                server_identity=chosen.server_identity,
            ),
            outcome="infra_error",
            error=chosen.scrub(_named(f"runner did not start: {describe_error(error)}", chosen)),
            started_at=datetime.now(UTC).isoformat(),
            queue_s=round(queue_s, 4),
        )
        with contextlib.suppress(OSError):  # the evidence of a failed run is kept like any other trial
            ResultsStore(chosen.results_dir, chosen.run_id).append(record)
        return record
    return await runner.run(case, trial_index, queue_s)


def _named(error: str, settings: Settings) -> str:
    """`error` with a full disk under the local server's cluster named first (`harness.run.disk`)."""
    if not settings.uses_local_server or environment.host().database_url:
        return error
    return disk.named(error, environment.host().pgdata_dir) or error


async def close_shared_runners() -> None:
    """Close every shared runner of the running loop and stop the shared local server; safe to repeat.

    The server is also stopped at interpreter exit, so calling this is optional but tidier.
    """
    loop = asyncio.get_running_loop()
    for key in [key for key in _SHARED if key[0] is loop]:
        runner = _SHARED.pop(key)
        await runner.aclose()
    _purge_dead_loops()
    if not _SHARED:
        while _SHARED_SERVER:
            _SHARED_SERVER.pop().stop()


def shared_settings() -> Settings:
    """The settings shared runners use when none are given (read once per process)."""
    if not _ENV_SETTINGS:
        _ENV_SETTINGS.append(Settings.from_env())
    return _ENV_SETTINGS[0]


def describe(record: TrialRecord) -> dict[str, Any]:
    """A compact summary of a record, for task metadata and logs."""
    return {
        "case_id": record.case_id,
        "trial_index": record.trial_index,
        "outcome": record.outcome,
        "error": record.error,
        "model": record.config.model,
        "tool_view_hash": record.config.tool_view_hash,
        "turns": record.turns,
        "cost_usd": record.cost_usd,
        "duration_s": record.duration_s,
    }
