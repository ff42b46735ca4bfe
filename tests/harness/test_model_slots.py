"""Time in a queue is not the model's timeout (issue 20 item 1).

A one-slot local server reached by three evaluators at once made 5 of 6 trials end `timeout` with
zero model calls, and the abandoned requests went on running. Here: one budget per endpoint for
every evaluator of the process (both protocols of one server share it), a local server held to the
slots its `/props` reports, the wait kept on the record as `queue_s`, a trial whose model never
answered is `infra_error` (not the model's `timeout`), and a request given up on is closed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from braintrust_run.report import usage_totals
from braintrust_run.shard import Shard
from braintrust_run.slots import parse_provider_budget, provider_slot
from braintrust_run.task import make_task, plan_rows
from harness.config import Settings
from harness.models.providers.openai_compat import OpenAICompatProvider
from harness.run.shared import close_shared_runners
from tests.fakes.llama_replay import LlamaReplay, answer
from tests.harness.conftest import make_case

SettingsFactory = Callable[..., Settings]
MODEL = "smollm2-135m-instruct"
ONE_CALL = make_case(
    id="count-posts", scenario="tool_selection", follow_ups=[], approval="none", expected_main="unchanged"
)


def test_a_budget_entry_may_name_an_endpoint_and_a_local_one_is_not_split_over_shards() -> None:
    budget = parse_provider_budget("openai=8,http://127.0.0.1:8080/v1=2,api.example.com:443=6", Shard(1, 2))
    assert budget == {"openai": 4, "127.0.0.1:8080": 2, "api.example.com:443": 3}
    with pytest.raises(ValueError) as raised:
        parse_provider_budget("127.0.0.1:8080", None)
    assert "EVAL_PROVIDER_CONCURRENCY: '127.0.0.1:8080' is not provider=number" in str(raised.value)


async def test_both_protocols_of_one_server_draw_from_one_budget_and_the_wait_is_measured() -> None:
    now = [0.0]
    waits: list[float] = []
    running, peak = [0], [0]
    # No timing window: a :8080 trial and the other endpoint's are inside at once, each waiting for the other.
    budgeted_inside, other_inside = asyncio.Event(), asyncio.Event()

    async def trial(model: str, base_url: str, *, budgeted: bool = True) -> None:
        async with provider_slot(model, {"127.0.0.1:8080": 1}, base_url, clock=lambda: now[0]) as slot:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            waits.append(slot.waited_s)
            if budgeted:
                budgeted_inside.set()
                await asyncio.wait_for(other_inside.wait(), 30)
                now[0] += 5.0  # each :8080 trial holds the slot for 5 s of the injected clock
            else:
                await asyncio.wait_for(budgeted_inside.wait(), 30)
                other_inside.set()
            running[0] -= 1

    await asyncio.gather(
        trial(f"openai:{MODEL}", "http://127.0.0.1:8080/v1"),
        trial(f"anthropic:{MODEL}", "http://127.0.0.1:8080"),
        trial(f"openai:{MODEL}", "http://localhost:9999/v1", budgeted=False),  # another endpoint: not in this budget
    )
    assert peak[0] == 2  # the two on :8080 never overlapped; the third ran beside them
    assert sorted(waits) == [0.0, 0.0, 5.0]


async def test_a_local_server_is_held_to_the_slots_its_props_report() -> None:
    _, props = answer("props")
    running, peak = [0], [0]
    with LlamaReplay() as server:

        async def trial() -> None:
            async with provider_slot(f"openai:{MODEL}", {}, server.openai_url):
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                await asyncio.sleep(0.02)
                running[0] -= 1

        await asyncio.gather(*(trial() for _ in range(4)))
    assert peak[0] == props["total_slots"]


async def test_a_request_given_up_on_is_closed_so_the_server_stops_working_on_it() -> None:
    with LlamaReplay(chat=["openai_tool_call"], hold_s=5.0) as server:
        provider = OpenAICompatProvider(MODEL, "local", base_url=server.openai_url, max_retries=0)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await provider.complete(
                    system=None, messages=[{"role": "user", "content": "hi"}], tools=[], max_tokens=8, temperature=None
                )
        await provider.aclose()
        for _ in range(200):
            if server.abandoned:
                break
            await asyncio.sleep(0.01)
    assert server.abandoned == 1 and time.monotonic() - started < 3.0


def hooks_for(row: Any) -> Any:
    """What the Braintrust task reads of its hooks: the row's metadata, its trial index and a span."""
    return SimpleNamespace(metadata=dict(row.metadata), trial_index=0, span=SimpleNamespace(log=lambda **_: None))


async def test_three_evaluators_on_a_one_slot_server_queue_for_it_instead_of_timing_out(
    local_server: Any, runner_settings: SettingsFactory
) -> None:
    env = {"EVAL_MODEL": f"openai:{MODEL}", "OPENAI_API_KEY": "local", "EVAL_TRIAL_TIMEOUT": "20"}
    with LlamaReplay(chat=["openai_length"] * 3, hold_s=0.4, slots=1) as server:
        settings = runner_settings({**env, "OPENAI_BASE_URL": server.openai_url})
        seen: list[Any] = []
        tasks = [
            make_task(
                settings.model_copy(update={"decoys": decoys}),
                ONE_CALL.scenario,
                [ONE_CALL],
                on_record=lambda *a: seen.append(a[2]),
            )
            for decoys in (0, 1, 2)
        ]
        rows = plan_rows([(ONE_CALL, 0)])
        try:
            await asyncio.gather(*(task(rows[0].input, hooks_for(rows[0])) for task in tasks))
        finally:
            await close_shared_runners()
        peak = server.peak
    records = [record for record in seen if record is not None]
    assert len(records) == 3 and peak == 1
    assert [record.usage.model_calls for record in records] == [1, 1, 1]
    assert all(record.outcome == "max_tokens" for record in records), [r.error for r in records]
    waits = sorted(record.queue_s for record in records)
    assert waits[0] < 0.4 <= waits[1] <= waits[2]  # the first ran at once, the others waited a whole trial


async def test_a_trial_whose_model_never_answered_is_an_infrastructure_error_not_a_timeout(
    local_server: Any, runner_settings: SettingsFactory
) -> None:
    # The deadline must fall on the held model request, not on the handshake before it (a loaded machine
    # can take half a second there): 2 s of room, and the answer held back 8 s.
    env = {"EVAL_MODEL": f"openai:{MODEL}", "OPENAI_API_KEY": "local", "EVAL_TRIAL_TIMEOUT": "2"}
    with LlamaReplay(chat=["openai_length"], hold_s=8.0) as server:
        settings = runner_settings({**env, "OPENAI_BASE_URL": server.openai_url})
        seen: list[Any] = []
        task = make_task(settings, ONE_CALL.scenario, [ONE_CALL], on_record=lambda *a: seen.append(a[2]))
        rows = plan_rows([(ONE_CALL, 0)])
        try:
            await task(rows[0].input, hooks_for(rows[0]))
        finally:
            await close_shared_runners()
        for _ in range(200):
            if server.abandoned:
                break
            await asyncio.sleep(0.01)
        abandoned = server.abandoned
    record = seen[0]
    assert record.outcome == "infra_error" and record.usage.model_calls == 0
    assert "did not answer a single request within EVAL_TRIAL_TIMEOUT=2" in (record.error or ""), record.error
    assert abandoned == 1  # the request was closed, not left running on the server


def test_the_summary_totals_the_time_trials_spent_waiting_for_a_slot() -> None:
    results = [SimpleNamespace(metadata={"outcome": "ok", "queue_s": wait, "usage": {}}) for wait in (0.0, 1.25, 2.5)]
    assert usage_totals(results)["queue_s"] == 3.75
