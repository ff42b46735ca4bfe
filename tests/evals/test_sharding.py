"""`EVAL_SHARD=k/n`: shards together run exactly the trials of an unsharded run, into one experiment."""

from __future__ import annotations

import asyncio
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from evals._shard import (
    Shard,
    fixed_trials,
    parse_provider_budget,
    parse_shard,
    provider_slot,
    shard_pool,
    shares,
)
from evals._wiring import trial_plan
from harness.cases import Case, load_cases
from harness.recording.store import load_run
from harness.servers.neon.pool_setup import DEFAULT_PER_FIXTURE
from tests.evals.cli import COUNT_POSTS_CASE, DATASET_HEAD, offline_env, run_braintrust_eval
from tests.fakes.braintrust_server import FakeBraintrust

TWO_CASES = (
    DATASET_HEAD
    + COUNT_POSTS_CASE
    + """  - id: casual-drop-tags
    scenario: tool_selection
    fixture: blog
    input: "In {project_id}, just drop the post_tags table, we don't use it."
    reference_sql: "DROP TABLE post_tags"
    required_tools: [prepare_database_migration]
    forbidden_tools: [complete_database_migration]
    target: {table: post_tags}
    expected_answer: "I staged dropping post_tags on a temporary branch; shall I apply it to main?"
"""
)


def pairs(plan: list[tuple[Case, int]]) -> list[tuple[str, int]]:
    return [(case.id, index) for case, index in plan]


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_partition_every_case_and_trial_of_the_bundled_dataset(count: int) -> None:
    cases = load_cases()
    everything = pairs(trial_plan(cases, 20, None))
    shares = [pairs(trial_plan(cases, 20, Shard(index, count))) for index in range(1, count + 1)]
    assert sorted(pair for share in shares for pair in share) == sorted(everything)  # all, none twice
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    assert shares == [pairs(trial_plan(cases, 20, Shard(index, count))) for index in range(1, count + 1)]


def test_shard_and_budget_settings_are_checked() -> None:
    assert parse_shard("") is None and parse_shard(" 2 / 4 ") == Shard(2, 4)
    for bad in ("0/2", "3/2", "1", "a/b", "1/0"):
        with pytest.raises(ValueError, match="EVAL_SHARD"):
            parse_shard(bad)
    assert parse_provider_budget("anthropic=8,openai=3", Shard(1, 4)) == {"anthropic": 2, "openai": 1}
    with pytest.raises(ValueError, match="EVAL_PROVIDER_CONCURRENCY: 'anthropic=0'"):
        parse_provider_budget("anthropic=0", None)


def test_a_provider_budget_caps_concurrent_trials_across_evaluators() -> None:
    running: list[int] = [0]
    peak: list[int] = [0]

    async def trial(model: str) -> None:
        async with provider_slot(model, {"anthropic": 2}):
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            await asyncio.sleep(0.01)
            running[0] -= 1

    async def main() -> None:
        await asyncio.gather(*(trial(f"anthropic:model-{i % 3}") for i in range(9)))
        assert peak[0] == 2
        peak[0] = 0
        await asyncio.gather(*(trial("control:oracle") for _ in range(5)))  # no budget: no cap
        assert peak[0] == 5

    asyncio.run(main())


def test_two_shards_run_every_trial_once_into_one_experiment(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(textwrap.dedent(TWO_CASES))
    expected = sorted(pairs(trial_plan(load_cases(dataset), 3, None)))
    ran: list[tuple[str, int]] = []
    with FakeBraintrust() as braintrust:
        for shard in ("1/2", "2/2"):
            results = tmp_path / f"shard-{shard[0]}"  # each shard on its own machine
            env = offline_env(
                results,
                EVAL_MODEL="control:oracle",
                EVAL_DATASET=str(dataset),
                EVAL_TRIALS="3",
                EVAL_SHARD=shard,
                EVAL_RUN_ID="nightly-42",
                **braintrust.env(),
            )
            [line] = run_braintrust_eval(env, "evals/eval_tool_selection.py", send_logs=True)
            assert line["metadata"]["shard"] == shard
            _, records = load_run(results / "nightly-42")
            ran += [(record.case_id, record.trial_index) for record in records]
        [experiment] = braintrust.experiments  # the second shard continued the first one's experiment
        roots = braintrust.root_rows(experiment["id"])
    assert sorted(ran) == expected
    assert sorted((row["metadata"]["case_id"], row["metadata"]["trial_index"]) for row in roots) == expected
    assert experiment["name"].endswith("· nightly-42")


def test_a_neon_pool_is_split_so_shards_never_share_a_project() -> None:
    cases = [case for case in load_cases() if case.fixture == "blog"]
    pool = tuple(f"blog:p{n}" for n in range(1, 6))
    shares = [shard_pool(pool, Shard(index, 2), cases, 20) for index in (1, 2)]
    assert shares == [("blog:p1", "blog:p3", "blog:p5"), ("blog:p2", "blog:p4")]
    assert shard_pool(pool, None) == pool


def bundled_pool(per_fixture: int, fixtures: tuple[str, ...] = ("blog", "shop", "tasks")) -> tuple[str, ...]:
    """A pool line as `pool setup --apply` writes it: sorted by fixture, `per_fixture` projects each."""
    return tuple(f"{fixture}:{fixture}-{n}" for fixture in sorted(fixtures) for n in range(per_fixture))


# The first four case files (fixtures blog, shop, tasks): the shares below are counted on them, so
# that a case file added later does not move the numbers.
FIRST_CASE_FILES = ("prepare.yaml", "complete.yaml", "tool_selection.yaml", "grants.yaml")


def test_a_pool_as_setup_writes_it_gives_every_shard_a_project_of_every_fixture() -> None:
    """The pool line is sorted by fixture: split as one list, shards 1-2 of 4 got no `shop` project."""
    cases = load_cases()
    fixtures = tuple(sorted({case.fixture for case in cases}))
    pool = bundled_pool(DEFAULT_PER_FIXTURE, fixtures)
    shares = [shard_pool(pool, Shard(index, 4), cases, 5) for index in range(1, 5)]
    for share in shares:
        assert sorted(entry.partition(":")[0] for entry in share) == list(fixtures)
    assert sorted(entry for share in shares for entry in share) == sorted(pool)  # none twice, none left out
    assert DEFAULT_PER_FIXTURE >= 4  # the default pool serves the nightly's 4 shards (checked there too)


def test_a_pool_too_small_for_the_shards_names_the_shard_its_share_and_the_setup() -> None:
    """Two projects per fixture for 4 shards whose shares all use every fixture: every shard stops at
    setup with the same shortfall, naming the shards left without a project, not a wrong `--apply`."""
    pool = bundled_pool(2)
    cases = [case for case in load_cases() if case.source_file and case.source_file.name in FIRST_CASE_FILES]
    messages = []
    for index in range(1, 5):
        with pytest.raises(ValueError) as short:
            shard_pool(pool, Shard(index, 4), cases, 5)
        messages.append(str(short.value))
    third = messages[2]
    assert third.startswith("EVAL_SHARD=3/4: NEON_PROJECT_POOL is too small for 4 shards")
    assert "the pool has blog 2, shop 2, tasks 2" in third
    assert "shard 3/4 (its share: 49 trial(s): blog 33, shop 14, tasks 2) gets no project of blog, shop, tasks" in third
    assert "shard 4/4 (its share: 48 trial(s)" in third  # the other shard left without, named too
    assert "4 shards need 4 projects per fixture (blog 4, shop 4, tasks 4)" in third
    assert "`python -m harness.pool setup --per-fixture 4 --apply`" in third
    assert messages[0].startswith("EVAL_SHARD=1/4:") and "shard 3/4 (its share" in messages[0]  # shard 1 stops too


SHARED_FIXTURES = """
version: 1
cases:
  - id: blog-count
    scenario: tool_selection
    fixture: blog
    input: "How many posts are there in {project_id}?"
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM posts"}}]
    expected_answer: "200."
  - id: tasks-count
    scenario: tool_selection
    fixture: tasks
    trial_count: 1
    input: "How many tasks are there in {project_id}?"
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM tasks"}}]
    expected_answer: "Some."
"""


def test_a_fixture_only_some_shares_use_needs_projects_for_those_shards_only(tmp_path: Path) -> None:
    """`tasks` has one trial, so only one of 4 shards runs it: one tasks project serves 4 shards, and it
    goes to that shard; blog's 4 trials reach every shard, so blog needs 4."""
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(textwrap.dedent(SHARED_FIXTURES))
    cases = load_cases(dataset)
    split = shares(cases, 3, 4)
    assert [share.fixtures for share in split] == [{"blog": 1}, {"blog": 1}, {"blog": 1}, {"tasks": 1}]
    pool = ("blog:b1", "blog:b2", "blog:b3", "tasks:t1")
    owned = [shard_pool(pool, Shard(index, 4), cases, 3) for index in range(1, 5)]
    assert owned == [("blog:b1",), ("blog:b2",), ("blog:b3",), ("tasks:t1",)]
    with pytest.raises(ValueError, match=r"shard 3/4 \(its share: 1 trial\(s\): blog 1\) gets no project of blog"):
        shard_pool(pool[1:], Shard(1, 4), cases, 3)
    # Trials not fixed (EVAL_TRIALS unset, adaptive, A/B arms): every case is taken to reach every shard.
    assert all(share.fixtures == {"blog": 1, "tasks": 1} and not share.exact for share in shares(cases, None, 4))


def test_the_trial_count_the_split_reads_is_the_one_shards_split() -> None:
    assert fixed_trials({"EVAL_TRIALS": "5"}) == 5
    for env in ({}, {"EVAL_TRIALS": "adaptive:20"}, {"EVAL_TRIALS": "5", "EVAL_AB_A": "x", "EVAL_AB_B": "y"}):
        assert fixed_trials(env) is None


@pytest.mark.parametrize("count", [2, 4, 7])
def test_shares_count_the_pairs_each_shard_runs(count: int) -> None:
    """The fixtures a share uses are read from the very pairs `trial_plan` gives each eval's shard."""
    cases = load_cases()
    for index, share in enumerate(shares(cases, 3, count), start=1):
        ran: Counter[str] = Counter()
        for scenario in ("prepare", "complete", "tool_selection"):
            plan = trial_plan([case for case in cases if case.scenario == scenario], 3, Shard(index, count))
            ran.update(case.fixture for case, _ in plan)
        assert share.fixtures == dict(ran)
