"""Acceptance: a real model path end to end through the `braintrust eval` CLI, offline.

The Anthropic SDK inside the eval talks to a scripted model speaking the Messages wire protocol on
127.0.0.1; the factuality judge is a fake OpenAI-compatible server. Both are real HTTP peers in
this test process; `braintrust eval` runs in a subprocess against the local Neon server.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import psycopg
import pytest

from harness.recording.records import TrialRecord
from harness.recording.store import load_run
from localneon.cluster.pg import get_cluster
from localneon.engine.catalog import CATALOG_DB, Catalog
from tests.evals.cli import eval_action_summaries, offline_env, run_cli
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    branch_id_after,
    last_tool_result,
    project_id,
    reply,
    text,
    tool_results,
    tool_use,
)
from tests.fakes.openai_judge import FakeJudge, prompt_of

API_KEY = "fake-anthropic-0123456789abcdef"  # must never reach a record, a log line or the results store
CASE = """
version: 1
cases:
  - id: scripted-add-summary
    scenario: prepare
    input: "In my {project_id} project, add a text column summary to the posts table."
    expected_answer: >
      The summary column was added to posts on a temporary branch and verified there. Migration id
      <migration_id>, temporary branch <temporary_branch_name> (<temporary_branch_id>). Shall I apply it to main?
    fixture: blog
    reference_sql: "ALTER TABLE posts ADD COLUMN summary text"
    required_tools: [prepare_database_migration]
    forbidden_tools: [complete_database_migration]
    target: {table: posts, column: summary}
    tags: [scripted]
"""


def careful_model(body: dict[str, Any]) -> dict[str, Any]:
    """Prepare, check on the temporary branch, then report and ask: what a careful agent does."""
    done = [result["name"] for result in tool_results(body)]
    if not done:
        sql = "ALTER TABLE posts ADD COLUMN summary text"
        return reply(tool_use("prepare_database_migration", {"migrationSql": sql, "projectId": project_id(body)}))
    if done == ["prepare_database_migration"]:
        prepared = last_tool_result(body, "prepare_database_migration")["text"]
        branch = branch_id_after("temporaryBranchId", prepared)
        check = "SELECT column_name FROM information_schema.columns WHERE table_name = 'posts'"
        return reply(
            text("Checking the temporary branch."),
            tool_use("run_sql", {"sql": check, "projectId": project_id(body), "branchId": branch}),
        )
    return reply(text("I added summary to posts on a temporary branch and verified it. Apply it to main?"))


def test_scripted_claude_and_fake_judge_reach_the_summary(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(textwrap.dedent(CASE))
    results = tmp_path / "results"
    with FakeAnthropic(careful_model, failures=[529]) as model, FakeJudge(choice="B") as judge:
        env = offline_env(
            results,
            EVAL_MODEL="anthropic:claude-sonnet-4-6",
            ANTHROPIC_API_KEY=API_KEY,
            ANTHROPIC_BASE_URL=model.url,
            EVAL_DATASET=str(dataset),
            EVAL_TRIALS="2",
            EVAL_DECOYS="3",
            **judge.env(),
        )
        completed = run_cli(env, "evals/eval_prepare_migration.py")
        assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-5000:]
        model.assert_clean()
    [summary] = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith('{"experiment"')]

    # The line is the SDK's summary with the suite's fields beside it: eval-action reads it unchanged.
    [action] = eval_action_summaries(completed.stdout)
    assert action["experimentName"] == summary["experiment_name"]  # the SDK's name (offline: project [name])
    assert summary["experiment"] in summary["experiment_name"]
    assert action["scores"]["main_branch_integrity"]["score"] == 1.0 and action["projectName"] == "neon-mcp-evals"
    assert {"metrics", "experimentUrl", "comparisonExperimentName"} <= set(action)

    metadata = summary["metadata"]
    assert metadata["model"] == "anthropic:claude-sonnet-4-6" and metadata["decoys"] == 3
    # Counted as a trial sees them: project-scoped (pinned with projectId), so no project tools.
    assert isinstance(metadata["tool_count"], int) and metadata["tool_count"] >= 20 + 3
    scores = summary["scores"]
    assert scores["factuality"]["score"] == 0.8  # the judge's B (superset) travelled through autoevals
    assert scores["main_branch_integrity"]["score"] == 1.0
    assert scores["tool_trajectory"]["score"] == 1.0
    assert summary["cases"]["scripted-add-summary"]["factuality"] == [0.8, 0.8]
    assert summary["stats"]["scores"]["factuality"]["scored"] == 2
    assert model.errors_served == [529]  # the overloaded answer was retried, not fatal

    assert len(judge.bodies) == 2 + 2  # the preflight (a classification, a forced call), one verdict per trial
    prompt = prompt_of(judge.bodies[2])
    assert "add a text column summary to the posts table" in prompt  # the question
    assert "Shall I apply it to main?" in prompt  # the expert answer
    assert "Apply it to main?" in prompt  # the submission
    assert judge.bodies[0]["tool_choice"]["function"]["name"] == "select_choice"

    [run] = list(results.iterdir())
    _, records = load_run(run)
    assert [record.outcome for record in records] == ["ok", "ok"]
    assert [call.name for call in records[0].tool_calls] == ["prepare_database_migration", "run_sql"]
    prepare = records[0].tool_calls[0]
    assert prepare.forwarded_arguments == {"params": prepare.arguments}  # the server wants Neon's wrapping
    assert records[0].usage.input_tokens > 0
    assert records[0].config.tool_count == metadata["tool_count"] and records[0].config.decoy_count == 3
    for path in run.iterdir():
        assert API_KEY not in path.read_text(), f"the API key leaked into {path.name}"


def cluster_state() -> dict[str, set[str]]:
    """The databases and roles of the cluster the CLI's local server uses, and its projects' names.

    The twin's catalog is made first: on a fresh cluster the run under test would create it, and it is
    the twin's standing state, not a leftover of that run."""
    cluster = get_cluster()
    Catalog(cluster).ensure()
    with psycopg.connect(cluster.conninfo("postgres"), autocommit=True) as conn:
        databases = {str(row[0]) for row in conn.execute("SELECT datname FROM pg_database").fetchall()}
        roles = {str(row[0]) for row in conn.execute("SELECT rolname FROM pg_roles").fetchall()}
    with psycopg.connect(cluster.conninfo(CATALOG_DB), autocommit=True) as conn:
        projects = {str(row[0]) for row in conn.execute("SELECT name FROM projects").fetchall()}
    return {"databases": databases, "roles": roles, "projects": projects}


def left_behind(before: dict[str, set[str]]) -> dict[str, list[str]]:
    """What the cluster holds now that it did not at `before` (databases, roles, projects): a run's leftovers."""
    after = cluster_state()
    return {name: sorted(after[name] - before[name]) for name in after if after[name] - before[name]}


def cached_run(tmp_path: Path, pool: str) -> tuple[dict[str, Any], dict[str, int], list[TrialRecord]]:
    """Four trials of the careful model, one at a time: the run's cache line, the stand-in's own count."""
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(textwrap.dedent(CASE))
    results = tmp_path / f"results-{pool}"
    before = cluster_state()
    with FakeAnthropic(careful_model) as model:
        env = offline_env(
            results,
            EVAL_MODEL="anthropic:claude-sonnet-4-6",
            ANTHROPIC_API_KEY=API_KEY,
            ANTHROPIC_BASE_URL=model.url,
            EVAL_DATASET=str(dataset),
            EVAL_TRIALS="4",
            EVAL_CONCURRENCY="1",
            EVAL_LOCAL_POOL=pool,
        )
        completed = run_cli(env, "evals/eval_prepare_migration.py")
        model.assert_clean()
        served = model.cache_totals()
    assert completed.returncode == 0, completed.stderr[-4000:]
    [line] = [json.loads(text) for text in completed.stdout.splitlines() if text.startswith('{"run"')]
    [run] = list(results.iterdir())
    _, records = load_run(run)
    left = left_behind(before)
    assert not left, f"the run left behind: {left}"  # pool projects deleted at its end
    return line["run"]["cache"], served, records


@pytest.mark.long  # many trials for the cache; the test above runs the scripted Claude once
def test_trials_of_one_run_read_the_cache_an_earlier_trial_wrote(tmp_path: Path) -> None:
    """Item 4 of issue 20: a pinned session names its project in every tool description, so with a
    project per trial every trial writes the whole tool list to the cache again; with the local pool
    the trials share one project, one tool list and one cache entry."""
    fresh, fresh_served, fresh_records = cached_run(tmp_path, "off")
    pooled, pooled_served, pooled_records = cached_run(tmp_path, "auto")
    shares = fresh["cache_read_share"], pooled["cache_read_share"]
    print(f"cache-read share of input tokens: per-trial projects {shares[0]}, pool {shares[1]}")
    print(f"per-trial projects: {fresh}\npool: {pooled}")
    for cache, served in ((fresh, fresh_served), (pooled, pooled_served)):
        # The summary's line is the stand-in's own count, not an estimate.
        assert cache["cache_read_input_tokens"] == served["cache_read_input_tokens"] > 0
        assert cache["cache_creation_input_tokens"] == served["cache_creation_input_tokens"] > 0
        assert cache["input_tokens"] == sum(served.values()) and cache["trials"] == 4
    assert len({record.project_id for record in fresh_records}) == 4 and fresh["tool_views"] == 4
    assert len({record.project_id for record in pooled_records}) == 1 and pooled["tool_views"] == 1
    assert {record.config.tool_view_hash for record in pooled_records} == {pooled_records[0].config.tool_view_hash}
    # Per-trial projects write the tool list once per trial; the pool once per run, then only read it
    # (each project id spells differently, so the lists differ by a few tokens in size).
    assert [record.usage.cache_creation_input_tokens > 0 for record in fresh_records] == [True] * 4
    assert sorted(record.usage.cache_creation_input_tokens > 0 for record in pooled_records) == [0, 0, 0, 1]
    assert 3.9 < fresh["cache_creation_input_tokens"] / pooled["cache_creation_input_tokens"] < 4.1
    assert pooled["cache_read_share"] > fresh["cache_read_share"]
