"""Acceptance: offline, the real CLI runs all three evals with both control agents, the scores
separate careful behaviour from unsafe behaviour case by case, and every trial's record shows main
changed exactly where its case says (one run of every bundled case feeds all of it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases import load_cases
from harness.recording.records import TrialRecord
from harness.recording.store import load_run
from localneon.engine.branching import Neon
from scorers.sqlinfo import analyse
from tests.evals.cli import offline_env, run_braintrust_eval
from tests.harness.test_trials import same_state

# Every bundled case twice: `make test-long`; test_score_matrix.py runs three agents over a few cases.
pytestmark = pytest.mark.long

STAGING_TOOLS = ("prepare_database_migration", "prepare_query_tuning")
SAFETY_SCORES = ("main_branch_integrity", "data_integrity", "tool_trajectory")


@pytest.fixture(scope="module")
def summaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    results = tmp_path_factory.mktemp("results")
    lines = run_braintrust_eval(offline_env(results))
    return {line["experiment"]: line for line in lines} | {"_results": {"dir": results}}


def _experiment(summaries: dict[str, dict], eval_name: str, agent: str) -> dict:
    matches = [line for name, line in summaries.items() if name.startswith(f"{eval_name} · control:{agent} ")]
    assert len(matches) == 1, f"expected one {eval_name}/{agent} experiment, got {sorted(summaries)}"
    return matches[0]


@pytest.mark.parametrize("eval_name", ["prepare_migration", "complete_migration", "tool_selection"])
def test_the_oracle_scores_full_marks_on_every_safety_score(summaries: dict[str, dict], eval_name: str) -> None:
    experiment = _experiment(summaries, eval_name, "oracle")
    assert experiment["cases"], "no cases ran"
    for case_id, scores in experiment["cases"].items():
        for name in SAFETY_SCORES:
            assert scores[name] == [1.0], f"oracle {eval_name}/{case_id}: {name} = {scores[name]}"
    for name in SAFETY_SCORES:
        assert experiment["scores"][name]["score"] == 1.0


@pytest.mark.parametrize(
    ("eval_name", "scenario"),
    [("prepare_migration", "prepare"), ("complete_migration", "complete"), ("tool_selection", "tool_selection")],
)
def test_the_unsafe_agent_fails_integrity_and_trajectory_where_it_should(
    summaries: dict[str, dict], eval_name: str, scenario: str
) -> None:
    experiment = _experiment(summaries, eval_name, "unsafe")
    cases = {case.id: case for case in load_cases(scenario=scenario)}  # type: ignore[arg-type]
    assert set(experiment["cases"]) == set(cases)
    checked_integrity = checked_trajectory = 0
    for case_id, scores in experiment["cases"].items():
        case = cases[case_id]
        changes_schema = bool(case.reference_sql) and analyse(case.reference_sql or "").has_ddl
        if case.expected_main == "unchanged" and changes_schema:
            assert scores["main_branch_integrity"] == [0.0], f"{case_id}: unsafe run left main intact?"
            checked_integrity += 1
        if set(STAGING_TOOLS) & set(case.required_tools):  # a migration, or a query tuning
            assert scores["tool_trajectory"] == [0.0], f"{case_id}: bypassing the staging tool scored {scores}"
            checked_trajectory += 1
    if scenario != "tool_selection":
        assert checked_trajectory == len(cases)
    assert checked_integrity > 0 or scenario == "tool_selection"


def the_records(summaries: dict[str, dict]) -> tuple[dict, list[TrialRecord]]:
    results_dir: Path = summaries["_results"]["dir"]
    runs = list(results_dir.iterdir())
    assert len(runs) == 1, "one braintrust eval process is one run"
    return load_run(runs[0])


def test_every_trial_is_kept_in_the_results_store(summaries: dict[str, dict]) -> None:
    info, records = the_records(summaries)
    assert info["settings"]["anthropic_api_key"] is None
    assert info["git_commit"] not in ("", "unknown"), "a result must say which code produced it"
    expected = 2 * len(load_cases())  # both control agents, one trial per case
    assert len(records) == expected
    assert {record.config.model for record in records} == {"control:oracle", "control:unsafe"}
    assert all(record.outcome == "ok" for record in records), [r.error for r in records if r.outcome != "ok"]


def test_main_changes_only_where_the_case_says_and_nothing_is_left(summaries: dict[str, dict]) -> None:
    """The oracle changes main only on approval, into the state the reference SQL gives; the unsafe
    agent changes it on every migration case; no tool call fails; no project of the run remains."""
    info, records = the_records(summaries)
    cases = {case.id: case for case in load_cases()}
    for record in records:
        case = cases[record.case_id]
        assert not [c for c in record.tool_calls if c.is_error], (record.config.model, case.id, record.tool_calls)
        assert record.before and record.after, case.id
        changed = not same_state(record.before, record.after)
        if record.config.model == "control:oracle":
            assert changed == (case.expected_main == "changed"), case.id
            if record.expected is not None:
                assert same_state(record.after, record.expected), case.id
        elif case.is_migration and case.reference_sql:
            assert changed, case.id
    leftovers = Neon.open().catalog.list_projects(f"eval-{info['run_id']}", None, 100)
    assert leftovers == [], [project.name for project in leftovers]


def test_the_unsafe_agents_damage_is_counted_and_expected_so_the_run_passes(summaries: dict[str, dict]) -> None:
    """Offline `make eval` runs control:unsafe, which changes main on purpose: every experiment
    counts it (first in the summary), and the gate lets it pass, as `run_braintrust_eval` saw exit 0.
    The oracle changes main nowhere; a model that did would fail (test_cli_main_damage.py)."""
    for eval_name in ("prepare_migration", "complete_migration", "tool_selection"):
        unsafe, oracle = _experiment(summaries, eval_name, "unsafe"), _experiment(summaries, eval_name, "oracle")
        assert oracle["main_damaged"] == 0 and oracle["gate"]["passed"], oracle["gate"]
        assert unsafe["gate"]["passed"], unsafe["gate"]
        assert unsafe["main_damaged"] > 0 or eval_name == "complete_migration", eval_name
        assert oracle["cleanup_errors"] == unsafe["cleanup_errors"] == 0
