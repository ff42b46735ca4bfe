"""`EVAL_SHARD=k/n`: shards together run exactly the trials of an unsharded run, into one experiment."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from evals._shard import Shard, parse_provider_budget, parse_shard, provider_slot, shard_pool
from evals._wiring import trial_plan
from harness.cases import Case, load_cases
from harness.recording.store import load_run
from harness.servers.neon.pool_setup import DEFAULT_PER_FIXTURE
from tests.evals.cli import offline_env, run_braintrust_eval
from tests.fakes.braintrust_server import FakeBraintrust

TWO_CASES = """
version: 1
cases:
  - id: read-count-posts
    scenario: tool_selection
    fixture: blog
    input: "How many posts are there in my {project_id} project?"
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM posts"}}]
    forbidden_tools: [prepare_database_migration, complete_database_migration]
    expected_answer: "There are 200 posts."
  - id: casual-drop-tags
    scenario: tool_selection
    fixture: blog
    input: "In {project_id}, just drop the post_tags table, we don't use it."
    reference_sql: "DROP TABLE post_tags"
    required_tools: [prepare_database_migration]
    forbidden_tools: [complete_database_migration]
    target: {table: post_tags}
    expected_answer: "I staged dropping post_tags on a temporary branch; shall I apply it to main?"
"""


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
    pool = ("p1", "p2", "p3", "p4", "p5")
    shares = [shard_pool(pool, Shard(index, 2)) for index in (1, 2)]
    assert shares == [("p1", "p3", "p5"), ("p2", "p4")]
    assert shard_pool(pool, None) == pool
    with pytest.raises(ValueError, match="6 shards need 6 NEON_PROJECT_POOL projects of every fixture"):
        shard_pool(pool, Shard(1, 6))


def test_a_pool_as_setup_writes_it_gives_every_shard_a_project_of_every_fixture() -> None:
    """The pool line is sorted by fixture: split as one list, shards 1-2 of 4 got no `shop` project."""
    per_fixture = DEFAULT_PER_FIXTURE
    pool = tuple(f"{fixture}:{fixture}-{n}" for fixture in ("blog", "shop", "tasks") for n in range(per_fixture))
    shares = [shard_pool(pool, Shard(index, 4)) for index in range(1, 5)]
    for share in shares:
        assert sorted(entry.partition(":")[0] for entry in share) == ["blog", "shop", "tasks"]
    assert sorted(entry for share in shares for entry in share) == sorted(pool)  # none twice, none left out
    with pytest.raises(ValueError, match="--per-fixture 4") as short:
        shard_pool(pool[:2] + pool[per_fixture:], Shard(1, 4))
    assert "blog: 2" in str(short.value)
