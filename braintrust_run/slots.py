"""The model-concurrency budget: how many trials may talk to one provider or endpoint at once.

`EVAL_PROVIDER_CONCURRENCY=anthropic=8,openai=4` is the number of trials that may talk to one
provider at once across the whole run; a shard takes its share (total // n, at least 1), and all
evaluators of a process (models, scenarios, decoy counts) draw from one semaphore per provider, so
shards together stay under the organisation's rate limits. An entry may name an endpoint instead
(`127.0.0.1:8080=1`, or its base URL): every model reached at that host and port, on either protocol,
shares it. A local endpoint (loopback) is this machine's own, so its number is not split over
shards; with no entry, a local server that reports its slots (llama-server's `/props`
`total_slots`) is held to them. A trial holds its slot from start to end, so time spent waiting for
one is the queue's (`TrialRecord.queue_s`), never the model's time or its EVAL_TRIAL_TIMEOUT.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from braintrust_run.run_state import this_run
from braintrust_run.shard import Shard
from harness.models.endpoint import endpoint_key, read_limits


def _is_local(endpoint: str) -> bool:
    host = endpoint.rpartition(":")[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def budget_key(name: str) -> str:
    """A budget entry's key: a provider prefix, or `host:port` when it names an endpoint."""
    name = name.strip()
    if "://" in name:
        return endpoint_key(name) or name.lower()
    return name.lower()


def parse_provider_budget(text: str, shard: Shard | None) -> dict[str, int]:
    """`anthropic=8,openai=4,127.0.0.1:8080=1` -> this shard's concurrent trials per provider or endpoint."""
    budget: dict[str, int] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, separator, value = part.rpartition("=")
        if not separator or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise ValueError(
                f"EVAL_PROVIDER_CONCURRENCY: '{part}' is not provider=number or host:port=number with the number >= 1"
            )
        key = budget_key(name)
        own_machine = ":" in key and _is_local(key)
        share = int(value) // shard.count if shard and not own_machine else int(value)
        budget[key] = max(1, share)
    return budget


def provider_of(model: str) -> str:
    return model.split(":", 1)[0].lower()


@dataclass
class Slot:
    """The slot a trial holds: which budget it came from and how long the trial waited for it."""

    key: str | None = None
    waited_s: float = 0.0


async def _server_slots(endpoint: str, base_url: str, model: str) -> int | None:
    known = this_run().slots.server_slots  # what each local endpoint reported, asked once per run
    if endpoint not in known:
        known[endpoint] = (await read_limits(base_url, model)).slots
    return known[endpoint]


async def slot_budget(model: str, budget: dict[str, int], base_url: str | None) -> tuple[str, int] | None:
    """The budget a trial of `model` draws from: its endpoint's, else its provider's, else a local
    server's own slot count; None when nothing limits it."""
    endpoint = endpoint_key(base_url)
    if endpoint is not None and endpoint in budget:
        return endpoint, budget[endpoint]
    provider = provider_of(model)
    if provider in budget:
        return provider, budget[provider]
    if endpoint is not None and base_url is not None and _is_local(endpoint):
        slots = await _server_slots(endpoint, base_url, model.partition(":")[2])
        if slots:
            return endpoint, slots
    return None


@contextlib.asynccontextmanager
async def provider_slot(
    model: str, budget: dict[str, int], base_url: str | None = None, clock: Callable[[], float] = time.monotonic
) -> AsyncIterator[Slot]:
    """Hold one slot of the model's budget for the duration (no limit when it has none)."""
    chosen = await slot_budget(model, budget, base_url)
    if chosen is None:
        yield Slot()
        return
    key, size = chosen
    loop = asyncio.get_running_loop()
    semaphores = this_run().slots.semaphores
    for stale in [stale for stale in semaphores if stale[0].is_closed()]:
        semaphores.pop(stale)
    semaphore = semaphores.setdefault((loop, key), asyncio.Semaphore(size))
    asked = clock()
    async with semaphore:
        yield Slot(key, max(0.0, clock() - asked))
