"""Acceptance: `braintrust eval` against a stand-in that behaves like today's Claude Sonnet 5.5.

One CLI run covers two experiments: a careful agent on a migration case (signed thinking blocks,
a paused turn, prompt caching, a scripted judge that scores every trial), and two read-only cases
where the model's reply is cut at max_tokens or it refuses (recorded as those outcomes). Two quick
runs show what stops a run before its first trial: a temperature the model refuses, and a judge
route whose model refuses forced tool use.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.models.rules import DEFAULT_MODEL
from harness.recording.store import load_run
from tests.evals.cli import offline_env, run_braintrust_eval, run_cli
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    branch_id_after,
    first_user_text,
    last_tool_result,
    project_id,
    reply,
    text,
    tool_results,
    tool_use,
)
from tests.fakes.openai_judge import FakeJudge

MODEL = "anthropic:claude-sonnet-5-5"
API_KEY = "fake-anthropic-current-0123456789"
CASES = """
version: 1
cases:
  - id: current-add-summary
    scenario: prepare
    input: "In my {project_id} project, add a text column summary to the posts table."
    expected_answer: "The summary column was added to posts on a temporary branch. Shall I apply it to main?"
    fixture: blog
    reference_sql: "ALTER TABLE posts ADD COLUMN summary text"
    required_tools: [prepare_database_migration]
    forbidden_tools: [complete_database_migration]
    target: {table: posts, column: summary}
  - id: long-winded-count
    scenario: tool_selection
    input: "How many posts are there in my {project_id} project? Explain at great length."
    expected_answer: "There are 200 posts."
    fixture: blog
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM posts", projectId: "{project_id}"}}]
    required_tools: [run_sql]
  - id: declined-count
    scenario: tool_selection
    input: "How many posts are there in my {project_id} project? (refuse this one)"
    expected_answer: "There are 200 posts."
    fixture: blog
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM posts", projectId: "{project_id}"}}]
    required_tools: [run_sql]
"""


def current_model(body: dict[str, Any]) -> dict[str, Any]:
    """A careful agent with a paused first turn; the read-only cases end cut off or declined."""
    question = first_user_text(body)
    assistant_turns = sum(1 for message in body["messages"] if message["role"] == "assistant")
    if "refuse this one" in question:
        return reply(text("I can't help with that."), stop_reason="refusal")
    if "great length" in question:
        return reply(text("There are 200 posts. To explain at great length, the posts table"), stop_reason="max_tokens")
    if assistant_turns == 0:
        return reply(text("Let me look at the project first."), stop_reason="pause_turn")
    done = [result["name"] for result in tool_results(body)]
    if not done:
        sql = "ALTER TABLE posts ADD COLUMN summary text"
        return reply(
            text("I will stage it on a temporary branch."),
            tool_use("prepare_database_migration", {"migrationSql": sql, "projectId": project_id(body)}),
        )
    if done == ["prepare_database_migration"]:
        branch = branch_id_after("temporaryBranchId", last_tool_result(body, "prepare_database_migration")["text"])
        check = "SELECT column_name FROM information_schema.columns WHERE table_name = 'posts'"
        return reply(tool_use("run_sql", {"sql": check, "projectId": project_id(body), "branchId": branch}))
    return reply(text("I added summary to posts on a temporary branch and checked it there. Apply it to main?"))


@pytest.mark.long  # two experiments of today's Claude; test_cli_scripted_model.py runs a scripted Claude
def test_a_current_model_run_is_clean_and_stop_reasons_are_outcomes(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(textwrap.dedent(CASES))
    results = tmp_path / "results"
    with FakeAnthropic(current_model) as model, FakeJudge(choice="C") as judge:
        env = offline_env(
            results,
            EVAL_MODEL=MODEL,
            ANTHROPIC_API_KEY=API_KEY,
            ANTHROPIC_BASE_URL=model.url,
            EVAL_DATASET=str(dataset),
            EVAL_TRIALS="2",
            EVAL_MAX_NO_ANSWERS="1",  # the cut and refused replies are the point here, not a failed run
            **judge.env(),
        )
        summaries = run_braintrust_eval(env, "evals/eval_prepare_migration.py", "evals/eval_tool_selection.py")
        assert model.refused == [] and model.violations == []  # 0 refused requests, 0 protocol violations
        assert model.signer.verified >= 4  # every thinking block came back, unchanged, on every tool turn
        assert judge.refused == []

    by_eval = {summary["metadata"]["eval"]: summary for summary in summaries}
    prepare = next(summary for name, summary in by_eval.items() if "prepare" in name)
    assert prepare["metadata"]["model"] == MODEL
    assert prepare["stats"]["scores"]["factuality"]["scored"] == 2  # factuality scored on every trial
    assert prepare["cases"]["current-add-summary"]["factuality"] == [1.0, 1.0]
    assert prepare["usage"]["cache_hit_ratio"] > 0.3  # tools and system read from the cache after the first call
    assert prepare["usage"]["judge_cost_usd"] > 0 and prepare["usage"]["judge_input_tokens"] > 0
    assert len(judge.bodies) == 2 + 2  # the preflight (a classification, a forced call), one verdict per trial
    assert judge.bodies[0]["model"] == "gpt-4.1-mini"  # the OpenAI route's default, never a Claude id

    [run] = list(results.iterdir())
    _, records = load_run(run)
    outcomes = {(record.case_id, record.outcome) for record in records}
    assert outcomes == {
        ("current-add-summary", "ok"),
        ("long-winded-count", "max_tokens"),
        ("declined-count", "refusal"),
    }
    cut = next(record for record in records if record.outcome == "max_tokens")
    assert cut.final_answer == "" and "EVAL_MAX_TOKENS=16000" in str(cut.error)
    ok = next(record for record in records if record.outcome == "ok")
    assert ok.messages[1]["content"][0]["type"] == "thinking"  # the paused turn went back as it came
    assert ok.usage.thinking_tokens > 0 and ok.usage.cache_read_input_tokens > 0
    assert ok.usage.cache_creation_input_tokens > 0 or any(r.usage.cache_creation_input_tokens for r in records)
    price = (
        ok.usage.input_tokens * 2.0
        + ok.usage.output_tokens * 10.0
        + ok.usage.cache_creation_input_tokens * 2.5
        + ok.usage.cache_read_input_tokens * 0.10
    ) / 1_000_000
    assert ok.cost_usd == round(price, 6)  # cache writes and reads are priced
    for path in run.iterdir():
        assert API_KEY not in path.read_text(), f"the API key leaked into {path.name}"


def test_a_temperature_the_model_refuses_stops_the_run_before_any_trial(tmp_path: Path) -> None:
    with FakeAnthropic([reply(text("never asked"))]) as model:
        env = offline_env(
            tmp_path / "results",
            EVAL_MODEL=MODEL,
            EVAL_TEMPERATURE="0",
            ANTHROPIC_API_KEY=API_KEY,
            ANTHROPIC_BASE_URL=model.url,
        )
        completed = run_cli(env, "evals/eval_tool_selection.py")
    assert completed.returncode != 0
    lines = [line for line in completed.stderr.splitlines() if "EVAL_TEMPERATURE=0 cannot be used with" in line]
    assert lines and MODEL in lines[0]
    assert model.bodies == [] and not (tmp_path / "results").exists()


def test_a_judge_route_whose_model_refuses_forced_tools_stops_at_preflight(tmp_path: Path) -> None:
    with FakeJudge() as judge:
        env = offline_env(
            tmp_path / "results", EVAL_MODEL="control:oracle", EVAL_JUDGE_MODEL="claude-sonnet-5-5", **judge.env()
        )
        completed = run_cli(env, "evals/eval_tool_selection.py")
        refused = list(judge.refused)
    assert completed.returncode != 0
    assert "judge route openai" in completed.stderr and "claude-sonnet-5-5" in completed.stderr
    assert "HTTP 400" in completed.stderr and "forcing a function call is not supported" in completed.stderr
    assert len(refused) == 1  # one preflight, no trial scored
    assert DEFAULT_MODEL == MODEL
