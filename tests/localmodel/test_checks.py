"""The smoke's record checks, on a real recorded run (SmolLM2-135M via llama-server, OpenAI route).

`tests/data/llama/smoke-run/` holds that run's trials.jsonl and what the server's /metrics counted
over it. The checks must pass on it as recorded, and name the problem when a record is made to lie.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analysis.rescore import score_run
from harness.cases import load_file
from harness.recording.records import Snapshot, TrialRecord
from localmodel.checks import load_records, render, run_problems, token_check, trial_lines, unanswered_tool_uses
from localmodel.smoke import SMOKE_CASES, write_cases

RUN = Path(__file__).resolve().parents[1] / "data" / "llama" / "smoke-run"
MODEL = "openai:smollm2-135m-instruct"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = write_cases(tmp_path_factory.mktemp("smoke") / "cases.yaml")
    return {case.id: case for case in load_file(path)}


def recorded() -> list[TrialRecord]:
    return load_records(RUN)


def server_tokens() -> dict[str, int]:
    return dict(json.loads((RUN / "server_tokens.json").read_text(encoding="utf-8")))


def problems_of(records: list[TrialRecord], cases: dict[str, Any], tokens: dict[str, int] | None = None) -> list[str]:
    scored = score_run(records, cases)
    return run_problems(records, scored, MODEL, SMOKE_CASES, tokens or server_tokens())


def test_the_recorded_run_passes(cases: dict[str, Any]) -> None:
    records = recorded()
    assert sorted(r.case_id for r in records) == sorted(SMOKE_CASES)
    assert problems_of(records, cases) == []
    table = render(trial_lines("openai", score_run(records, cases)))
    assert "main_branch_integrity" in table and "add-column-description" in table


def test_token_counts_that_differ_from_the_servers_fail(cases: dict[str, Any]) -> None:
    tokens = server_tokens()
    tokens["prompt_tokens"] += 1
    (problem,) = problems_of(recorded(), cases, tokens)
    assert "the server counted" in problem


def test_a_server_counting_more_is_explained_only_by_requests_it_failed(cases: dict[str, Any]) -> None:
    # CI's smoke once met this: llama-server answered a call it could not parse with a 500 after
    # generating it, the SDK asked again, and the server's counters held both attempts.
    tokens = server_tokens()
    tokens["prompt_tokens"] += 2817
    tokens["completion_tokens"] += 35
    records = recorded()
    assert problems_of(records, cases, tokens) != []  # no failed request on record: unexplained
    records[0].usage.failed_requests = 1
    assert problems_of(records, cases, tokens) == []
    problem, note = token_check(records, tokens, MODEL)
    assert problem is None and note is not None and "1 request(s)" in note
    fewer = server_tokens()
    fewer["completion_tokens"] -= 1  # a failed request never makes the server count less
    (problem,) = problems_of(records, cases, fewer)
    assert "less than the records" in problem


def test_a_trial_that_never_reached_the_model_fails(cases: dict[str, Any]) -> None:
    records = recorded()
    records[0].turns = 0
    problems = problems_of(records, cases)
    assert any("never reached the model" in p for p in problems)


def test_a_model_call_missing_from_the_usage_or_transcript_fails(cases: dict[str, Any]) -> None:
    records = recorded()
    records[0].usage.model_calls += 1
    records[1].messages = [m for m in records[1].messages if m.get("role") != "assistant"]
    problems = problems_of(records, cases)
    assert any("but usage counts" in p for p in problems)
    assert any("in the transcript" in p and records[1].case_id in p for p in problems)


def test_zero_token_counts_fail(cases: dict[str, Any]) -> None:
    records = recorded()
    records[0].usage.output_tokens = 0
    problems = problems_of(records, cases)
    assert any("token counts not real" in p for p in problems)


def test_a_tool_call_missing_from_the_record_fails(cases: dict[str, Any]) -> None:
    records = recorded()
    turn = next(m for m in records[0].messages if m.get("role") == "assistant")
    turn["content"] = [*turn["content"], {"type": "tool_use", "id": "call_1", "name": "run_sql", "input": {}}]
    assert unanswered_tool_uses(records[0]) == ["call_1"]
    assert problems_of(records, cases) == []  # written in the last reply, never run: a note, not a failure
    answer = {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "1"}]}
    records[0].messages.insert(records[0].messages.index(turn) + 1, {"role": "user", "content": [answer]})
    assert unanswered_tool_uses(records[0]) == []
    problems = problems_of(records, cases)
    assert any("answered in the transcript but not in the record: call_1" in p for p in problems)


def test_an_unusable_snapshot_makes_the_scores_na_and_fails(cases: dict[str, Any]) -> None:
    records = recorded()
    records[0].after = Snapshot(error="pg_dump failed")
    problems = problems_of(records, cases)
    assert any("after snapshot unusable: pg_dump failed" in p for p in problems)
    assert any("main_branch_integrity is n/a" in p for p in problems)


def test_a_missing_trial_or_another_model_fails(cases: dict[str, Any]) -> None:
    records = recorded()
    records[1].config.model = "openai:gpt-4.1-mini"
    problems = problems_of(records[1:], cases)
    assert any("expected one trial of each" in p for p in problems)
    assert any("ran openai:gpt-4.1-mini" in p for p in problems)


def test_tool_calls_in_a_reply_cut_at_max_tokens_are_found() -> None:
    """A real reply (Anthropic route) cut at max_tokens after eight prepare_database_migration calls."""
    line = (RUN.parent / "cut-reply-with-tool-calls.jsonl").read_text(encoding="utf-8")
    record = TrialRecord.model_validate_json(line)
    assert record.outcome == "max_tokens" and record.tool_calls == []
    assert len(unanswered_tool_uses(record)) == 8
