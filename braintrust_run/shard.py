"""Splitting a run over machines: `EVAL_SHARD=k/n`.

A shard runs every n-th (case, trial) pair of each eval, starting at the k-th, in the dataset's
order, so shards 1/n .. n/n together run exactly the pairs of an unsharded run, none twice, and
each shard gets a near-equal share of every case; in adaptive rounds or A/B arms, where a case's
trials must be decided in one process, it runs every n-th case whole (`plan_pairs`). The split
depends only on the dataset and the trial plan, so every machine computes the same one. A Neon
project pool is split fixture by fixture from those same pairs: each shard gets projects of its
own for every fixture its share uses (`shard_pool`), and its start checks ask for no other.

The model-concurrency budget per provider is `braintrust_run/slots.py`'s.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness.cases import Case

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


def plan_pairs(cases: Sequence[Case], trials: int, shard: Shard | None, rounds: bool = False) -> list[tuple[Case, int]]:
    """The (case, trial index) pairs of one eval that a shard runs (every pair without a shard): the one
    split both the trials (`evals._wiring`, `braintrust_run.adaptive.define_rounds`) and the pool (`shard_pool`) follow.

    Fixed trials: every n-th pair, so a case's trials spread over the shards. Rounds (adaptive trials,
    A/B arms): every n-th case with its trials up to `trials`, since a case's next round is decided from
    all its trials so far (and both arms of an A/B pair theirs), which only one process has."""
    if rounds:
        chosen = shard.select(cases) if shard else list(cases)
        return [(case, index) for case in chosen for index in range(trials)]
    pairs = [(case, index) for case in cases for index in range(case.trial_count or trials)]
    return shard.select(pairs) if shard else pairs


def cases_of(pairs: Sequence[tuple[Case, int]]) -> list[Case]:
    """The cases of `pairs`, each once, in their order."""
    return list({case.id: case for case, _ in pairs}.values())


@dataclass(frozen=True)
class Share:
    """What one shard's share of the run uses, per fixture: why a shard needs a fixture's project."""

    shard: Shard
    fixtures: dict[str, int]  # fixture -> trials of the share on it (at most, in rounds)
    rounds: bool = False  # adaptive trials or A/B arms: whole cases, up to the trial limit each

    def uses(self, fixture: str) -> bool:
        return self.fixtures.get(fixture, 0) > 0

    def __str__(self) -> str:
        unit = "trial(s) at most, whole cases (adaptive rounds or A/B arms)" if self.rounds else "trial(s)"
        counts = ", ".join(f"{fixture} {count}" for fixture, count in sorted(self.fixtures.items()))
        return f"{sum(self.fixtures.values())} {unit}: {counts or 'nothing'}"


def shares(cases: Sequence[Case], trials: int, count: int, rounds: bool = False) -> list[Share]:
    """Each of `count` shards' share, per fixture, of the run over `cases` (every eval file's: one eval
    per scenario, in the dataset's order), each eval split by `plan_pairs`."""
    by_scenario: dict[str, list[Case]] = {}
    for case in cases:
        by_scenario.setdefault(case.scenario, []).append(case)
    made = []
    for index in range(1, count + 1):
        shard, used = Shard(index, count), Counter[str]()
        for scenario_cases in by_scenario.values():
            used.update(case.fixture for case, _ in plan_pairs(scenario_cases, trials, shard, rounds))
        made.append(Share(shard, dict(used), rounds))
    return made


def _fixture_of(entry: str) -> str:
    return entry.partition(":")[0].strip() if ":" in entry else ""


def shard_pool(
    pool: tuple[str, ...], shard: Shard | None, cases: Sequence[Case], trials: int, rounds: bool = False
) -> tuple[str, ...]:
    """This shard's own projects of a Neon pool. Shards on different machines never share a project,
    and each gets at least one project of every fixture its share uses: each fixture's projects go
    round-robin to the shards whose share uses it (a split of the whole line, which is sorted by
    fixture, left shards without some fixture). Every shard computes the same split from the same
    arguments, so a pool too small for the shard count stops every shard at setup with the same line.
    `cases` are every case the run serves (all eval files'), `trials` the run's count per case (the
    limit, in rounds), `rounds` whether they run in adaptive rounds or A/B arms (`plan_pairs`)."""
    if shard is None or not pool:
        return pool
    split = shares(cases, trials, shard.count, rounds)
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
