"""One trial, end to end, and the runner that owns the server, API client, sandbox and model.

`TrialRunner.run(case, trial_index)` never raises for infrastructure trouble: any model, server or
sandbox failure ends the trial as `outcome="infra_error"` with the reason on the record, so one
overloaded call cannot fail a whole `braintrust eval` run. Only cancellation propagates, after
the sandbox is cleaned up. Braintrust tasks reach a runner through `harness.run.shared`.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from datetime import UTC, datetime

from harness import environment
from harness.cases import Case
from harness.config import Settings
from harness.mcp.client import TRIAL_HEADER, MCPConnection, ServerTool, connect, server_side_error
from harness.mcp.server_process import LocalServer, ServerEndpoints
from harness.mcp.toolview import ToolView, load_overrides, trial_seed
from harness.models.agent import AgentState, LoopSettings, run_agent
from harness.models.endpoint import ServerLimits, provider_limits, unlisted_model_notice
from harness.models.factory import make_provider
from harness.models.providers import Provider, TrialContext
from harness.models.providers.registry import model_rules
from harness.models.rules import trial_cost_usd
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import ResultsStore, StoreWriteError, record_lost
from harness.run import disk
from harness.run.liveness import register_run
from harness.servers.family import ExpectedStart, ServerFamily, TrialBackend, TrialSandbox
from harness.servers.registry import family_for


class TrialRunner:
    """Runs trials against one configured server and model; use as an async context manager."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        local_server: LocalServer | None = None,
        write_results: bool = True,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self._server = local_server
        self._owns_server = local_server is None
        self._token = secrets.token_urlsafe(24)
        self.write_results = write_results
        self.family: ServerFamily = family_for(self.settings)  # harness/servers/registry.py
        self.backend: TrialBackend | None = None  # the server family's (harness/servers/family.py)
        self.provider: Provider | None = None
        self.store = ResultsStore(self.settings.results_dir, self.settings.run_id)
        self.overrides = load_overrides(self.settings.tool_descriptions) if self.settings.tool_descriptions else None
        self._restart_lock: asyncio.Lock | None = None
        self._endpoints: ServerEndpoints | None = None
        self.limits = ServerLimits()
        self.started = False
        self._said_disk_full = False

    @property
    def server(self) -> LocalServer | None:
        return self._server

    def _secrets(self) -> list[str]:
        values = [self._token]
        if self._server is not None and self._server.token:
            values.append(self._server.token)
        return values

    def scrub(self, text: str) -> str:
        return self.settings.scrub(text, self._secrets())

    async def start(self) -> TrialRunner:
        """Start (or reach) the server, the API client and the model provider."""
        if self.started:
            return self
        register_run(self.settings.run_id)  # so the janitor can tell a killed run's sandboxes from a live run's
        self.backend = await self._build_backend()
        self.provider = make_provider(self.settings)
        self.limits = await provider_limits(self.provider)  # a local model's context window, from its server
        if (
            notice := unlisted_model_notice(self.settings.model, model_rules(self.settings.model), self.limits)
        ) is not None:
            print(f"harness: {notice}", file=sys.stderr, flush=True)
        if self.write_results:
            self.store.write_run(self.settings)
        self.started = True
        return self

    async def _build_backend(self) -> TrialBackend:
        family = self.family
        if self.settings.uses_local_server:
            if self._server is None:
                self._server = LocalServer(token=self._token, descriptions=self.settings.server_descriptions)
            self._endpoints = await self._server.start()
            backend = family.local_backend(self.settings, self._endpoints, self._server.token)
            backend.on_lost_server(self._follow_server)  # a restarted server is followed, not lost
            # What runs that are over left on it (a killed run, a PostgreSQL killed under one): gone before
            # this run makes anything, so the run after a crash cleans up after it.
            await backend.collect_leftovers(self.settings.results_dir, self.settings.run_id)
            return backend
        return family.remote_backend(self.settings)

    def _backend_current(self) -> bool:
        server = self._server
        return server is None or (server.alive and server.endpoints == self._endpoints)

    async def _ensure_server(self) -> None:
        """Follow a local server that died (restart it) or was restarted by another runner (new port).

        The backend is kept and its API client re-pointed, so trials in flight keep a working client
        (their own calls follow the server through `_follow_server`)."""
        if self._backend_current():
            return
        if self._restart_lock is None:
            self._restart_lock = asyncio.Lock()
        async with self._restart_lock:
            if self._backend_current() or self._server is None:
                return
            if not self._server.alive:
                print(f"harness: local server died; restarting:\n{self._server.stderr_tail(10)}", file=sys.stderr)
            endpoints = await self._server.start()
            self._endpoints = endpoints
            if self.backend is not None:
                self.backend.follow(endpoints)

    async def _follow_server(self) -> str | None:
        """The API URL to retry at after a failed connection, or None when nothing changed."""
        if self._server is None:
            return None
        if self._restart_lock is not None and self._restart_lock.locked():
            async with self._restart_lock:  # a restart is under way: retry once it is done
                pass
            return self._endpoints.api_url if self._endpoints is not None else None
        for _ in range(40):  # a killed server drops its connections a moment before it is reaped
            if not self._backend_current():
                break
            await asyncio.sleep(0.05)
        else:
            return None
        await self._ensure_server()
        return self._endpoints.api_url if self._endpoints is not None else None

    async def aclose(self) -> None:
        """Close clients; stop the server this runner started."""
        self.started = False
        if self.backend is not None:
            backend, self.backend = self.backend, None
            await backend.aclose()  # a local pool's projects are deleted here
        if self.provider is not None:
            await self.provider.aclose()
            self.provider = None
        if self._owns_server and self._server is not None:
            self._server.stop()

    async def __aenter__(self) -> TrialRunner:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _config(self) -> TrialConfig:
        settings = self.settings
        return TrialConfig(
            model=settings.model,
            server=self.scrub(settings.server),
            server_family=self.family.name,
            server_identity=settings.server_identity,
            description_variant=settings.description_variant,
            surface=settings.surface,
            temperature=settings.temperature,
            max_turns=settings.max_turns,
            max_tokens=settings.max_tokens,
            system_prompt=settings.system_prompt,
            context_window=self.limits.context_window,
        )

    async def run(self, case: Case, trial_index: int = 0, queue_s: float = 0.0) -> TrialRecord:
        """Run one trial; infrastructure errors end up on the record, never raised.

        `case` is the bundled case (its hash goes on the record); the trial runs it in the server
        family's terms (`ServerFamily.case_for`), as the scorers judge it. `queue_s` is how long the
        trial waited for a model slot before this call (kept on the record)."""
        record = TrialRecord(
            case_id=case.id,
            trial_index=trial_index,
            case_hash=case.content_hash(),
            config=self._config(),
            started_at=datetime.now(UTC).isoformat(),
            queue_s=round(queue_s, 4),
        )
        state = AgentState()
        started = time.perf_counter()
        if self.write_results and self.store.failed:
            # Records cannot be kept: a trial run now would be lost too, so none is started.
            record.outcome = "infra_error"
            record.error = f"not started: the results store is failing ({self.store.failed})"
            record_lost(f"{case.id}#{trial_index}: not started, the results store is failing")
            return record
        try:
            if not self.started:
                await self.start()
            await self._ensure_server()
            await self._run(self.family.case_for(case), trial_index, record, state)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            record.outcome = "infra_error"
            record.error = describe_error(error)
        finally:
            record.messages = state.messages
            record.tool_calls = state.tool_calls
            record.final_answer = state.final_answer
            record.follow_ups = state.follow_ups_sent
            record.usage = state.usage
            record.turns = state.turns
            record.answered_by = state.answered_by
            record.timings["model"] = round(state.model_seconds, 4)
            record.timings["tools"] = round(state.tool_seconds, 4)
            record.duration_s = round(time.perf_counter() - started, 4)
            record.cost_usd = trial_cost_usd(
                self.settings.model, model_rules(self.settings.model), state.usage, state.answered_by
            )
        if record.outcome == "infra_error":
            record.error = self._named_cause(record.error)
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            # The trial was cancelled but a library on the way swallowed the CancelledError (its
            # sandbox is cleaned up by now). Honour the cancellation: a run being stopped must stop.
            raise asyncio.CancelledError()
        record = TrialRecord.model_validate_json(self.scrub(record.model_dump_json()))
        if self.write_results:
            try:
                self.store.append(record)
            except StoreWriteError as error:
                record.cleanup_error = f"results store: {error}"
                print(f"harness: RECORD LOST, no further trials start: {error}", file=sys.stderr, flush=True)
        return record

    def _named_cause(self, error: str | None) -> str | None:
        """A failed trial's error with a cause PostgreSQL's own words may not give (a full disk under
        the local server's cluster) named first, and said once on the console."""
        if not self.settings.uses_local_server or environment.host().database_url:
            return error
        named = disk.named(error, environment.host().pgdata_dir)
        if named != error and not self._said_disk_full:
            self._said_disk_full = True
            print(f"harness: {disk.full_disk(environment.host().pgdata_dir) or disk.FULL_DISK}", file=sys.stderr)
        return named

    async def _run(self, case: Case, trial_index: int, record: TrialRecord, state: AgentState) -> None:
        assert self.backend is not None and self.provider is not None
        backend, timings = self.backend, record.timings
        capture_timeout = self.settings.capture_timeout
        label = f"{secrets.token_hex(3)}-{case.id}-{trial_index}"  # random first: it survives truncation
        clock = time.perf_counter()
        info: TrialSandbox | None = None
        start_copy: ExpectedStart | None = None
        try:
            async with backend.open_sandbox(case, label) as info:
                timings["sandbox_open"] = _lap(clock)
                record.project_id = info.sandbox_id
                record.default_branch_id = info.main_id
                record.default_branch_name = info.main_name
                clock = time.perf_counter()
                record.sandbox_notes = list(info.notes)
                record.before = info.before or await backend.capture(info, timeout=capture_timeout)
                timings["capture_before"] = _lap(clock)
                try:
                    if case.expected_main == "changed":  # main as the agent found it, for the expected state
                        clock = time.perf_counter()
                        start_copy = await backend.start_expected(info, self.settings.run_id, label)
                        timings["expected"] = _lap(clock)
                    record.input = case.render(case.input, info.sandbox_id)
                    follow_ups = [case.render(text, info.sandbox_id) for text in case.follow_ups]
                    failure: Exception | None = None
                    harness_made = start_copy.harness_made if start_copy else set()
                    try:
                        await self._converse(case, trial_index, record, state, info, follow_ups, harness_made)
                    except Exception as error:
                        if not state.turns:
                            raise  # the model was never reached: main cannot have changed through it
                        failure = error  # main is captured below all the same: the model may have changed it
                    clock = time.perf_counter()
                    record.branches_left = await backend.objects_left(info, harness_made)
                    record.after = await backend.capture(info, timeout=capture_timeout, after_model=True)
                    timings["capture_after"] = _lap(clock)
                    if start_copy is not None:
                        clock = time.perf_counter()
                        record.expected = await backend.finish_expected(start_copy, case, capture_timeout)
                        timings["expected"] = round(timings["expected"] + _lap(clock), 4)
                    # A capture the model itself made fail is its failure (scored as damage), not ours.
                    failed = [
                        f"{name}: {snap.error}"
                        for name, snap in (
                            ("before", record.before),
                            ("at approval", record.at_approval),
                            ("after", record.after),
                            ("expected", record.expected),
                        )
                        if snap is not None and snap.error and (name == "before" or snap.fault != "model")
                    ]
                    if failed and record.outcome == "ok":
                        # Without its snapshots the trial proves nothing about main: never a pass.
                        record.outcome = "infra_error"
                        record.error = "snapshot failed: " + "; ".join(failed)
                    if failure is not None:
                        raise failure
                finally:
                    if start_copy is not None:
                        problem = await backend.drop_expected(start_copy)
                        if problem:
                            record.cleanup_error = problem
                clock = time.perf_counter()
        finally:
            if info is not None:
                timings["sandbox_close"] = _lap(clock)
                record.cleanup_error = info.cleanup_error or record.cleanup_error
            timings["sandbox"] = round(timings.get("sandbox_open", 0.0) + timings.get("sandbox_close", 0.0), 4)
            timings["capture"] = round(
                sum(
                    timings.get(part, 0.0)
                    for part in ("capture_before", "capture_approval", "capture_after", "expected")
                ),
                4,
            )

    async def _converse(
        self,
        case: Case,
        trial_index: int,
        record: TrialRecord,
        state: AgentState,
        info: TrialSandbox,
        follow_ups: list[str],
        harness_made: set[str],
    ) -> None:
        assert self.backend is not None and self.provider is not None
        settings, timings = self.settings, record.timings
        backend = self.backend
        clock = time.perf_counter()
        target = await self.backend.target_for(info, case.grant)
        # Which trial a request belongs to, for the server's logs (and the Neon stand-in's overlap check:
        # MCP 2026-07 has no sessions, so nothing else on the wire tells one trial's requests from another's).
        trial_name = f"{settings.run_id}/{case.id}/{trial_index}/{secrets.token_hex(4)}"
        headers = {**self.backend.mcp_headers, TRIAL_HEADER: trial_name}
        connection: MCPConnection | None = None
        # One deadline for the whole conversation, the server's handshake included: a server that never
        # answers `initialize` costs a trial its timeout, not the SDK's two minutes per request.
        deadline = asyncio.timeout(settings.trial_timeout)

        async def at_answer(index: int) -> None:
            """Before the approving answer: main and the model's copies of it, read as they are now (the
            time it takes is the harness's, so the trial's deadline moves by as much)."""
            if case.approval != "approve" or index != len(follow_ups) - 1:
                return
            started = time.perf_counter()
            record.at_approval = await backend.capture(info, timeout=settings.capture_timeout, after_model=True)
            record.staged = await backend.capture_copies(info, harness_made, timeout=settings.capture_timeout)
            spent = time.perf_counter() - started
            timings["capture_approval"] = round(spent, 4)
            when = deadline.when()
            if when is not None:
                deadline.reschedule(when + spent)

        try:
            async with deadline, connect(target, headers) as connection:
                server_tools = await connection.list_tools()
                record.tool_annotations = {tool.name: dict(tool.annotations or {}) for tool in server_tools}
                timings["connect"] = _lap(clock)
                view = self._view(server_tools, case, trial_index, record)
                context = TrialContext(
                    case,
                    info.sandbox_id,
                    case.database or info.database,
                    self.family.roles,
                    self.family.answers,
                    trial_index,
                    trial_name,
                )
                provider = self.provider.for_trial(context)
                loop = LoopSettings(
                    system=settings.system_prompt,
                    max_turns=settings.max_turns,
                    max_tokens=settings.max_tokens,
                    temperature=settings.temperature,
                    scrub=self.scrub,
                    max_result_bytes=settings.max_tool_result_bytes,
                    before_follow_up=at_answer,
                )
                clock = time.perf_counter()
                await run_agent(provider, view, connection, state, record.input, follow_ups, loop)
        except TimeoutError:
            if not deadline.expired():
                raise
            waiting = "initialize" if connection is None else connection.in_flight
            if waiting and waiting.startswith("tools/call") and await self.backend.model_sql_running(info, 10.0):
                # The database is busy with what the model sent (a `pg_sleep`, a lock wait): its doing,
                # not the server's, so a timeout like any other (else damage then a hang excuses it).
                state.outcome = "timeout"
                state.error = (
                    f"trial exceeded EVAL_TRIAL_TIMEOUT={settings.trial_timeout}s while the model's {waiting} was "
                    "still running its SQL"
                )
            elif waiting:  # the server never answered: its failure, whatever the model was doing
                state.outcome = "infra_error"
                state.error = f"the server did not answer {waiting} within EVAL_TRIAL_TIMEOUT={settings.trial_timeout}s"
            elif state.usage.model_calls:
                state.outcome = "timeout"
                state.error = f"trial exceeded EVAL_TRIAL_TIMEOUT={settings.trial_timeout}s"
            else:  # the model never answered once: a busy or stalled endpoint, not the model's doing
                state.outcome = "infra_error"
                state.error = (
                    f"the model endpoint did not answer a single request within EVAL_TRIAL_TIMEOUT="
                    f"{settings.trial_timeout}s (its slots busy with other requests, or too slow for the "
                    "prompt: see EVAL_PROVIDER_CONCURRENCY)"
                )
        timings["agent"] = _lap(clock)
        record.outcome = state.outcome
        if state.error:
            record.error = state.error
        if state.outcome == "turn_cap":
            record.error = f"stopped after EVAL_MAX_TURNS={settings.max_turns} model calls"
        failed_at_server = [call for call in state.tool_calls if call.is_error and server_side_error(call.result_text)]
        if record.outcome == "ok" and state.tool_calls and len(failed_at_server) == len(state.tool_calls):
            # Not one call reached a working server (its API refused every one): nothing the model did counts.
            record.outcome = "infra_error"
            count, first = len(state.tool_calls), failed_at_server[0].result_text[:300]
            record.error = f"every tool call failed at the server ({count} of {count}); first: {first}"

    def _view(self, server_tools: list[ServerTool], case: Case, trial_index: int, record: TrialRecord) -> ToolView:
        """The tools this trial's model sees (filter, overrides, decoys, shuffle), noted on the record."""
        settings = self.settings
        seed = (
            trial_seed(settings.tool_shuffle_seed, case.id, trial_index)
            if settings.tool_shuffle_seed is not None
            else None
        )
        view = ToolView(
            server_tools,
            overrides=self.overrides,
            decoys=settings.decoys,
            seed=seed,
            name_filter=settings.tool_filter,
            variant=record.config.description_variant,
        )
        record.config.tool_count = len(view.tools)
        record.config.decoy_count = view.decoy_count
        record.config.tool_view_hash = view.hash
        record.config.seed = seed
        return view


def describe_error(error: BaseException) -> str:
    """`Type: message` of the error, or of each leaf of an exception group (anyio wraps errors in groups)."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe_error(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}"


def _lap(since: float) -> float:
    return round(time.perf_counter() - since, 4)
