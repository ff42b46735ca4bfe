"""Splitting a run over machines: `EVAL_SHARD=k/n`, and a model-concurrency budget per provider.

A shard runs every n-th (case, trial) pair of each eval, starting at the k-th, in the dataset's
order, so shards 1/n .. n/n together run exactly the pairs of an unsharded run, none twice, and
each shard gets a near-equal share of every case. The split depends only on the dataset and the
trial counts, so every machine computes the same one. A Neon project pool is split the same way
(each shard its own projects).

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
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness.models.endpoint import endpoint_key, read_limits

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as written in EVAL_SHARD
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, items: Sequence[T]) -> list[T]:
        """This shard's share of `items` (every count-th item, starting at index-1)."""
        return [item for position, item in enumerate(items) if position % self.count == self.index - 1]


def parse_shard(text: str) -> Shard | None:
    """`EVAL_SHARD=k/n` with 1 <= k <= n; empty means no sharding."""
    text = text.strip()
    if not text:
        return None
    match = re.fullmatch(r"(\d+)\s*/\s*(\d+)", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"EVAL_SHARD: {text!r} is not k/n with 1 <= k <= n (e.g. 2/4)")
    return Shard(int(match[1]), int(match[2]))


def shard_pool(pool: tuple[str, ...], shard: Shard | None) -> tuple[str, ...]:
    """This shard's own projects of a Neon pool, for every fixture: shards on different machines never
    share a project, and each gets one of every fixture (`fixture:project` entries are split per
    fixture, not as one list, which would leave a shard without some fixture's projects)."""
    if shard is None or not pool:
        return pool
    groups: dict[str, list[str]] = {}
    for entry in pool:
        fixture = entry.partition(":")[0] if ":" in entry else ""
        groups.setdefault(fixture, []).append(entry)
    short = {fixture or "(any)": len(entries) for fixture, entries in groups.items() if len(entries) < shard.count}
    if short:
        counts = ", ".join(f"{fixture}: {count}" for fixture, count in sorted(short.items()))
        raise ValueError(
            f"EVAL_SHARD={shard}: {shard.count} shards need {shard.count} NEON_PROJECT_POOL projects of every "
            f"fixture (one per shard, so no two machines share one), and the pool has fewer ({counts}); "
            f"create them with `python -m harness.pool setup --per-fixture {shard.count} --apply`"
        )
    return tuple(entry for entries in groups.values() for entry in shard.select(entries))


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


_SEMAPHORES: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Semaphore] = {}
_SERVER_SLOTS: dict[str, int | None] = {}  # what each local endpoint reported, asked once per process


def provider_of(model: str) -> str:
    return model.split(":", 1)[0].lower()


@dataclass
class Slot:
    """The slot a trial holds: which budget it came from and how long the trial waited for it."""

    key: str | None = None
    waited_s: float = 0.0


async def _server_slots(endpoint: str, base_url: str, model: str) -> int | None:
    if endpoint not in _SERVER_SLOTS:
        _SERVER_SLOTS[endpoint] = (await read_limits(base_url, model)).slots
    return _SERVER_SLOTS[endpoint]


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
    for stale in [stale for stale in _SEMAPHORES if stale[0].is_closed()]:
        _SEMAPHORES.pop(stale)
    semaphore = _SEMAPHORES.setdefault((loop, key), asyncio.Semaphore(size))
    asked = clock()
    async with semaphore:
        yield Slot(key, max(0.0, clock() - asked))
