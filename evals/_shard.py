"""Splitting a run over machines: `EVAL_SHARD=k/n`, and a model-concurrency budget per provider.

A shard runs every n-th (case, trial) pair of each eval, starting at the k-th, in the dataset's
order, so shards 1/n .. n/n together run exactly the pairs of an unsharded run, none twice, and
each shard gets a near-equal share of every case. The split depends only on the dataset and the
trial counts, so every machine computes the same one. A Neon project pool is split the same way
(each shard its own projects).

`EVAL_PROVIDER_CONCURRENCY=anthropic=8,openai=4` is the number of trials that may talk to one
provider at once across the whole run; a shard takes its share (total // n, at least 1), and all
evaluators of a process (models, scenarios, decoy counts) draw from one semaphore per provider, so
shards together stay under the organisation's rate limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

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
    """This shard's own projects of a Neon pool, so shards on different machines never share one."""
    if shard is None or not pool:
        return pool
    if len(pool) < shard.count:
        raise ValueError(f"NEON_PROJECT_POOL has {len(pool)} project(s) for {shard.count} shards: each needs its own")
    return tuple(shard.select(pool))


def parse_provider_budget(text: str, shard: Shard | None) -> dict[str, int]:
    """`anthropic=8,openai=4` -> this shard's concurrent trials per provider."""
    budget: dict[str, int] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, separator, value = part.partition("=")
        if not separator or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise ValueError(f"EVAL_PROVIDER_CONCURRENCY: '{part}' is not provider=number with the number >= 1")
        share = int(value) // shard.count if shard else int(value)
        budget[name.strip().lower()] = max(1, share)
    return budget


_SEMAPHORES: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Semaphore] = {}


def provider_of(model: str) -> str:
    return model.split(":", 1)[0].lower()


@contextlib.asynccontextmanager
async def provider_slot(model: str, budget: dict[str, int]) -> AsyncIterator[None]:
    """Hold one of the provider's slots for the duration (no limit when the provider has no budget)."""
    provider = provider_of(model)
    if provider not in budget:
        yield
        return
    loop = asyncio.get_running_loop()
    for key in [key for key in _SEMAPHORES if key[0].is_closed()]:
        _SEMAPHORES.pop(key)
    semaphore = _SEMAPHORES.setdefault((loop, provider), asyncio.Semaphore(budget[provider]))
    async with semaphore:
        yield
