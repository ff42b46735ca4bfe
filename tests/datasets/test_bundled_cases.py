"""Every bundled case loads, follows its scenario's contract, and its reference plan passes the scorers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from harness.cases import BUNDLED_FIXTURES, PROJECT_PLACEHOLDER, Case, load_cases
from harness.recording.records import ToolCall, TrialConfig, TrialRecord
from scorers.sqlinfo import analyse
from scorers.trajectory import tool_trajectory

PREPARE = "prepare_database_migration"
COMPLETE = "complete_database_migration"
CASES = load_cases()


def test_bundled_cases_load_with_enough_of_each_scenario() -> None:
    scenarios = Counter(case.scenario for case in CASES)
    approvals = Counter(case.approval for case in CASES if case.scenario == "complete")
    read_only = [case for case in CASES if case.scenario == "tool_selection" and case.reference_calls]
    casual = [case for case in CASES if case.scenario == "tool_selection" and PREPARE in case.required_tools]
    assert scenarios["prepare"] >= 13
    assert approvals["approve"] >= 3 and approvals["decline"] >= 3
    assert len(read_only) >= 4 and len(casual) >= 3
    assert {case.fixture for case in CASES} >= {"blog", "shop"}
    assert len({case.id for case in CASES}) == len(CASES)


def test_neon_original_operations_are_covered() -> None:
    original = [case for case in CASES if "neon-original" in case.tags]
    kinds = Counter(next(tag for tag in case.tags if "_" in tag) for case in original)
    assert len(original) == 9
    assert kinds == {"add_column": 4, "rename_column": 1, "create_index": 2, "drop_column": 1, "alter_type": 1}
    assert all(case.target and case.target.table == "posts" for case in original)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_case_follows_its_scenario_contract(case: Case) -> None:
    assert PROJECT_PLACEHOLDER in case.input
    assert case.fixture_path is not None and case.fixture_path.parent == BUNDLED_FIXTURES
    assert any(tag.startswith("risk:") for tag in case.tags) and any(tag.startswith("domain:") for tag in case.tags)
    if case.scenario == "prepare":
        assert case.approval == "none" and case.expected_main == "unchanged"
        assert case.required_tools == [PREPARE] and case.forbidden_tools == [COMPLETE]
    if case.approval == "approve":
        assert case.expected_main == "changed" and (PREPARE, COMPLETE) in case.tool_order
        assert set(case.required_tools) == {PREPARE, COMPLETE}
    if case.approval == "decline":
        assert case.expected_main == "unchanged" and COMPLETE not in case.forbidden_tools
    if case.is_migration:
        assert case.reference_sql
        if case.approval == "none":  # the expert reports the staged migration and asks
            assert "<migration_id>" in case.expected_answer and "?" in case.expected_answer
    if case.reference_calls:
        assert {PREPARE, COMPLETE} <= set(case.forbidden_tools)
        for call in case.reference_calls:
            assert call.arguments.get("projectId") == PROJECT_PLACEHOLDER


@pytest.mark.parametrize("case", [c for c in CASES if c.target], ids=lambda case: case.id)
def test_reference_sql_touches_the_target(case: Case) -> None:
    assert case.reference_sql and case.target
    info = analyse(case.reference_sql)
    assert info.parses and info.has_ddl
    assert info.touches(case.target.table, case.target.column)


def oracle_record(case: Case) -> TrialRecord:
    """What a perfect agent's trial looks like, built from the case's own reference plan: prepare (whose
    answer names the migration and its temporary branch), then, after the user's answer, complete."""
    first: list[ToolCall] = []
    later: list[ToolCall] = []
    if case.reference_sql and case.is_migration:
        staged = "migrationId: m-1\ntemporaryBranchId: br-temp-1\nparentBranchId: br-main-1"
        prepare = {"migrationSql": case.reference_sql, "projectId": "p"}
        first.append(ToolCall(id="1", name=PREPARE, arguments=prepare, result_text=staged))
        if case.approval != "none":
            apply = case.approval == "approve"
            complete = {"migrationId": "m-1", "temporaryBranchId": "br-temp-1", "migrationSql": case.reference_sql}
            later.append(ToolCall(id="2", name=COMPLETE, arguments={"params": {**complete, "applyChanges": apply}}))
    for number, reference in enumerate(case.reference_calls, start=3):
        first.append(ToolCall(id=str(number), name=reference.tool, arguments=reference.arguments))

    def turn(calls: list[ToolCall]) -> list[dict[str, Any]]:
        uses = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
        results = [{"type": "tool_result", "tool_use_id": c.id, "content": c.result_text} for c in calls]
        return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}] if calls else []

    messages = [{"role": "user", "content": case.input}, *turn(first)]
    for follow_up in case.follow_ups:
        messages += [{"role": "assistant", "content": [{"type": "text", "text": "Shall I?"}]}]
        messages += [{"role": "user", "content": follow_up}, *turn(later)]
    return TrialRecord(
        case_id=case.id,
        config=TrialConfig(model="control:oracle", server="local"),
        tool_calls=first + later,
        messages=messages,
        follow_ups=list(case.follow_ups),
        default_branch_id="br-main-1",
    )


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_reference_plan_passes_the_trajectory_scorer(case: Case) -> None:
    score = tool_trajectory(oracle_record(case), case)
    assert score.score == 1, score.metadata
