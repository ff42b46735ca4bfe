"""Splitting a run over machines: `EVAL_SHARD=k/n`, and a model-concurrency budget per provider.

A shard runs every n-th (case, trial) pair of each eval, starting at the k-th, in the dataset's
order, so shards 1/n .. n/n together run exactly the pairs of an unsharded run, none twice, and
each shard gets a near-equal share of every case. The split depends only on the dataset and the
trial counts, so every machine computes the same one. A Neon project pool is split fixture by
fixture: each shard gets projects of its own for every fixture its share uses (`shard_pool`).

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
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness.cases import Case, load_cases
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


@dataclass(frozen=True)
class Share:
    """What one shard's share of the run uses, per fixture: why a shard needs a fixture's project."""

    shard: Shard
    fixtures: dict[str, int]  # fixture -> trials of the share on it (cases, when `exact` is False)
    exact: bool  # False: the trial counts are not known, so every case is taken to reach every shard

    def uses(self, fixture: str) -> bool:
        return self.fixtures.get(fixture, 0) > 0

    def __str__(self) -> str:
        unit = "trial(s)" if self.exact else "case(s), EVAL_TRIALS not a fixed number"
        counts = ", ".join(f"{fixture} {count}" for fixture, count in sorted(self.fixtures.items()))
        return f"{sum(self.fixtures.values())} {unit}: {counts or 'nothing'}"


def fixed_trials(env: Mapping[str, str]) -> int | None:
    """The run's fixed trial count, or None when it is not known here: EVAL_TRIALS unset (its default
    lives in evals._wiring), adaptive, or A/B arms (adaptive rounds and A/B arms are not split by shard)."""
    text = env.get("EVAL_TRIALS", "").strip()
    if env.get("EVAL_AB_A", "").strip() or env.get("EVAL_AB_B", "").strip():
        return None
    return int(text) if text.isdigit() and int(text) >= 1 else None


def shares(cases: Sequence[Case], trials: int | None, count: int) -> list[Share]:
    """Each of `count` shards' share, per fixture: every eval (scenario) splits its own (case, trial)
    pairs as `evals._wiring.trial_plan` does; with `trials` None every case counts in every shard."""
    if trials is None:
        everything = Counter(case.fixture for case in cases)
        return [Share(Shard(index, count), dict(everything), exact=False) for index in range(1, count + 1)]
    by_scenario: dict[str, list[Case]] = {}
    for case in cases:
        by_scenario.setdefault(case.scenario, []).append(case)
    made = []
    for index in range(1, count + 1):
        shard, used = Shard(index, count), Counter[str]()
        for scenario_cases in by_scenario.values():
            pairs = [(case, trial) for case in scenario_cases for trial in range(case.trial_count or trials)]
            used.update(case.fixture for case, _ in shard.select(pairs))
        made.append(Share(shard, dict(used), exact=True))
    return made


def _fixture_of(entry: str) -> str:
    return entry.partition(":")[0].strip() if ":" in entry else ""


def shard_pool(
    pool: tuple[str, ...],
    shard: Shard | None,
    cases: Sequence[Case] | None = None,
    trials: int | None = None,
) -> tuple[str, ...]:
    """This shard's own projects of a Neon pool. Shards on different machines never share a project,
    and each gets at least one project of every fixture its share uses: each fixture's projects go
    round-robin to the shards whose share uses it (a split of the whole line, which is sorted by
    fixture, left shards without some fixture). Every shard computes the same split, so a pool too
    small for the shard count stops every shard at setup with the same line. `cases` defaults to the
    run's (EVAL_DATASET); `trials` is the run's fixed count per case (`fixed_trials`; None: not known)."""
    if shard is None or not pool:
        return pool
    if cases is None:
        cases = load_cases()
    split = shares(cases, trials, shard.count)
    groups: dict[str, list[str]] = {}
    for entry in pool:
        groups.setdefault(_fixture_of(entry), []).append(entry)
    used = sorted({fixture for share in split for fixture in share.fixtures if share.uses(fixture)})
    users = {fixture: [share for share in split if share.uses(fixture)] for fixture in used}
    short = sorted(fixture for fixture, using in users.items() if len(groups.get(fixture, [])) < len(using))
    if short:
        raise ValueError(_short_pool_message(shard, groups, users, short))
    owner = _owners(groups, users, [share.shard for share in split])
    return tuple(entry for entry in pool if owner[entry] == shard)


def _owners(groups: dict[str, list[str]], users: dict[str, list[Share]], everyone: list[Shard]) -> dict[str, Shard]:
    """Each project's shard: round-robin over the shards using its fixture (over all, when none does)."""
    owner: dict[str, Shard] = {}
    for fixture, entries in groups.items():
        receivers = [share.shard for share in users.get(fixture, [])] or everyone
        for position, entry in enumerate(entries):
            owner[entry] = receivers[position % len(receivers)]
    return owner


def _short_pool_message(
    shard: Shard, groups: dict[str, list[str]], users: dict[str, list[Share]], short: list[str]
) -> str:
    """One line: which shards get no project of which fixture, their shares, and the setup that fixes it."""
    missing: dict[Shard, list[str]] = {}
    shares_of = {share.shard: share for using in users.values() for share in using}
    for fixture in short:
        for share in users[fixture][len(groups.get(fixture, [])) :]:  # round-robin: the first ones get one each
            missing.setdefault(share.shard, []).append(fixture)
    order = sorted(missing, key=lambda lacking: (lacking != shard, lacking.index))  # this shard first
    lacking = "; ".join(
        f"shard {each} (its share: {shares_of[each]}) gets no project of {', '.join(missing[each])}" for each in order
    )
    have = ", ".join(f"{fixture} {len(groups.get(fixture, []))}" for fixture in short)
    need = {fixture: len(using) for fixture, using in users.items()}
    per_fixture = max(need.values())
    counts = ", ".join(f"{fixture} {count}" for fixture, count in sorted(need.items()))
    return (
        f"EVAL_SHARD={shard}: NEON_PROJECT_POOL is too small for {shard.count} shards, each of which needs a "
        f"project of its own (never shared between machines) for every fixture its share uses; the pool has "
        f"{have}, so {lacking}. {shard.count} shards need {per_fixture} projects per fixture ({counts}): create "
        f"them with `python -m harness.pool setup --per-fixture {per_fixture} --apply` and set NEON_PROJECT_POOL "
        "to the line it prints"
    )


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
