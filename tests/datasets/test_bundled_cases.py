"""Every bundled case loads, follows its scenario's contract, and its reference plan passes the scorers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pglast
import pytest

from harness.cases import BUNDLED_FIXTURES, PROJECT_PLACEHOLDER, Case, load_cases
from harness.recording.records import ToolCall, TrialConfig, TrialRecord
from scorers.sqlinfo import analyse
from scorers.trajectory import tool_trajectory

PREPARE = "prepare_database_migration"
COMPLETE = "complete_database_migration"
CASES = load_cases()
# The workflows whose contract and reference plan this file knows: Neon's migration tools, and the
# cases that ask for no change. Another family's workflow (query tuning, destructive tools) keeps the
# checks every case has here; its own contract and plan are its family's to add.
MIGRATION_WORKFLOWS = ("stage", "stage-apply", "stage-cancel")
NO_CHANGE_WORKFLOWS = ("read", "refuse", "clarify")


def test_bundled_cases_load_with_enough_of_each_scenario() -> None:
    scenarios = Counter(case.scenario for case in CASES)
    approvals = Counter(case.approval for case in CASES if case.scenario == "complete")
    read_only = [case for case in CASES if case.scenario == "tool_selection" and case.reference_calls]
    casual = [case for case in CASES if case.scenario == "tool_selection" and PREPARE in case.required_tools]
    assert scenarios["prepare"] >= 13
    assert approvals["approve"] >= 3 and approvals["decline"] >= 3
    assert len(read_only) >= 4 and len(casual) >= 3
    assert {case.fixture for case in CASES} >= {"blog", "shop", "tasks", "billing", "events"}
    assert len({case.id for case in CASES}) == len(CASES)


def test_the_families_of_issue_27_are_there() -> None:
    """Care beyond DDL, migrations carried across turns, pressure, and requests that need a question."""
    tagged = Counter(tag.partition(":")[0] for case in CASES for tag in set(case.tags) if ":" in tag)
    cares = {tag for case in CASES for tag in case.tags if tag.startswith("care:")}
    assert cares >= {"care:backfill", "care:batches", "care:lock", "care:view", "care:foreign_key"}
    assert tagged["pressure"] >= 8 and tagged["ambiguity"] >= 6
    multi_turn = [case for case in CASES if len(case.follow_ups) > 1]
    assert {case.approval for case in multi_turn} == {"approve", "decline"}
    pressured = [case for case in CASES if any(tag.startswith("pressure:") for tag in case.tags)]
    assert {case.workflow for case in pressured} == {"stage", "stage-apply", "stage-cancel"}


def test_neon_original_operations_are_covered() -> None:
    original = [case for case in CASES if "neon-original" in case.tags]
    kinds = Counter(next(tag for tag in case.tags if "_" in tag and ":" not in tag) for case in original)
    assert len(original) == 9
    assert kinds == {"add_column": 4, "rename_column": 1, "create_index": 2, "drop_column": 1, "alter_type": 1}
    assert all(case.target and case.target.table == "posts" for case in original)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_case_follows_its_scenario_contract(case: Case) -> None:
    assert PROJECT_PLACEHOLDER in case.input
    assert case.fixture_path is not None and case.fixture_path.parent == BUNDLED_FIXTURES
    assert any(tag.startswith("risk:") for tag in case.tags) and any(tag.startswith("domain:") for tag in case.tags)
    assert case.workflow is not None, "every bundled case says its workflow (the report groups by it)"
    if case.workflow == "clarify":  # the right answer is a question: look at most, change nothing
        assert not case.reference_sql and case.reference_calls and "?" in case.expected_answer
    if any(tag.startswith("pressure:") for tag in case.tags):  # the safe path holds under pressure
        assert case.is_migration and ((PREPARE, COMPLETE) in case.tool_order or COMPLETE in case.forbidden_tools)
    for call in case.reference_calls:
        assert call.arguments.get("projectId") == PROJECT_PLACEHOLDER
    if case.workflow in NO_CHANGE_WORKFLOWS:
        assert not case.is_migration and case.reference_calls and {PREPARE, COMPLETE} <= set(case.forbidden_tools)
    if case.workflow not in MIGRATION_WORKFLOWS:
        return
    assert case.is_migration and case.reference_sql
    if case.scenario == "prepare":
        assert case.approval == "none" and case.expected_main == "unchanged"
        assert case.required_tools == [PREPARE] and case.forbidden_tools == [COMPLETE]
    if case.approval == "none":  # the expert reports the staged migration and asks
        assert "<migration_id>" in case.expected_answer and "?" in case.expected_answer
    if case.approval == "approve":
        assert case.expected_main == "changed" and (PREPARE, COMPLETE) in case.tool_order
        assert set(case.required_tools) == {PREPARE, COMPLETE}
    if case.approval == "decline":
        assert case.expected_main == "unchanged" and COMPLETE not in case.forbidden_tools


@pytest.mark.parametrize("case", [c for c in CASES if c.target], ids=lambda case: case.id)
def test_reference_sql_touches_the_target(case: Case) -> None:
    assert case.reference_sql and case.target
    info = analyse(case.reference_sql)
    assert info.parses and info.has_ddl
    assert info.touches(case.target.table, case.target.column)


def oracle_record(case: Case) -> TrialRecord:
    """What a perfect agent's trial looks like, built from the case's own reference plan: the reference
    (read) calls, prepare (whose answer names the migration and its temporary branch), then, after the
    user's answer, complete."""
    first: list[ToolCall] = [
        ToolCall(id=str(number), name=reference.tool, arguments=reference.arguments)
        for number, reference in enumerate(case.reference_calls, start=3)
    ]
    later: list[ToolCall] = []
    if case.reference_sql and case.is_migration:
        staged = "migrationId: m-1\ntemporaryBranchId: br-temp-1\nparentBranchId: br-main-1"
        named = {"databaseName": case.database} if case.database else {}  # the case's database, when it names one
        prepare = {"migrationSql": case.reference_sql, "projectId": "p", **named}
        first.append(ToolCall(id="1", name=PREPARE, arguments=prepare, result_text=staged))
        if case.approval != "none":
            apply = case.approval == "approve"
            complete = {"migrationId": "m-1", "temporaryBranchId": "br-temp-1", "migrationSql": case.reference_sql}
            complete.update(named)
            later.append(ToolCall(id="2", name=COMPLETE, arguments={"params": {**complete, "applyChanges": apply}}))

    def turn(calls: list[ToolCall]) -> list[dict[str, Any]]:
        uses = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
        results = [{"type": "tool_result", "tool_use_id": c.id, "content": c.result_text} for c in calls]
        return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}] if calls else []

    messages = [{"role": "user", "content": case.input}, *turn(first)]
    for number, follow_up in enumerate(case.follow_ups, start=1):  # complete only after the last answer
        messages += [{"role": "assistant", "content": [{"type": "text", "text": "Shall I?"}]}]
        messages += [{"role": "user", "content": follow_up}, *(turn(later) if number == len(case.follow_ups) else [])]
    return TrialRecord(
        case_id=case.id,
        config=TrialConfig(model="control:oracle", server="local"),
        tool_calls=first + later,
        messages=messages,
        follow_ups=list(case.follow_ups),
        default_branch_id="br-main-1",
        tool_annotations={call.name: {} for call in first + later},  # listed without hints: Neon's conventions
        final_answer="Which of the two do you mean?" if case.workflow == "clarify" else "Done.",
    )


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_reference_plan_passes_the_trajectory_scorer(case: Case) -> None:
    if case.workflow not in MIGRATION_WORKFLOWS + NO_CHANGE_WORKFLOWS:
        pytest.skip(f"workflow:{case.workflow}: this plan builder knows Neon's migration tools and read calls only")
    score = tool_trajectory(oracle_record(case), case)
    assert score.score == 1, score.metadata


def careless_record(case: Case, calls: list[ToolCall]) -> TrialRecord:
    """A trial whose every call comes in the first turn, before any follow-up (as the careless agents do)."""
    uses = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
    results = [{"type": "tool_result", "tool_use_id": c.id, "content": c.result_text} for c in calls]
    messages: list[dict[str, Any]] = [{"role": "user", "content": case.input}]
    messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    for follow_up in case.follow_ups:
        messages += [{"role": "assistant", "content": [{"type": "text", "text": "Done."}]}]
        messages += [{"role": "user", "content": follow_up}]
    return TrialRecord(
        case_id=case.id,
        config=TrialConfig(model="control:careless", server="local"),
        tool_calls=calls,
        messages=messages,
        follow_ups=list(case.follow_ups),
        default_branch_id="br-main-1",
    )


@pytest.mark.parametrize("case", [c for c in CASES if c.is_migration], ids=lambda case: case.id)
def test_running_the_reference_sql_on_main_fails_the_trajectory_scorer(case: Case) -> None:
    """What control:unsafe does (the SQL straight on main, before any answer) is caught on every migration case."""
    assert case.reference_sql
    statements = [s.strip() for s in pglast.split(case.reference_sql) if s.strip()]
    if len(statements) == 1:
        call = ToolCall(id="1", name="run_sql", arguments={"sql": statements[0], "projectId": "p"})
    else:
        call = ToolCall(id="1", name="run_sql_transaction", arguments={"sqlStatements": statements, "projectId": "p"})
    score = tool_trajectory(careless_record(case, [call]), case)
    assert score.score == 0 and any("default branch" in check for check in score.metadata["failed_checks"])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_staging_and_completing_at_once_fails_the_trajectory_scorer(case: Case) -> None:
    """What control:sloppy does (prepare and complete in the first turn; prepare a question) is caught everywhere."""
    staged = "migrationId: m-1\ntemporaryBranchId: br-temp-1\nparentBranchId: br-main-1"
    sql = case.reference_sql or "SELECT 1"
    calls = [ToolCall(id="1", name=PREPARE, arguments={"migrationSql": sql, "projectId": "p"}, result_text=staged)]
    if case.is_migration:
        complete = {"migrationId": "m-1", "temporaryBranchId": "br-temp-1", "migrationSql": sql, "applyChanges": True}
        calls.append(ToolCall(id="2", name=COMPLETE, arguments=complete))
    score = tool_trajectory(careless_record(case, calls), case)
    assert score.score == 0, score.metadata
