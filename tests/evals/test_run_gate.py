"""The run gate: each "exit non-zero when ..." rule, on the reporter's own functions.

The rules that are cheap to reach through the real CLI are also tested there (floors, a dead
server, refused uploads, an unknown floor name); these tests pin the thresholds and messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from autoevals import Score

from braintrust_run import report as run_report
from braintrust_run.gate import check_floor_names, experiment_failures, run_failures
from braintrust_run.scoring import observed
from harness.environment import forget_process_env
from tests.evals.cli import offline_env, run_cli


def result(
    case_id: str, scores: dict[str, float | None], outcome: str = "ok", output: str | None = None, **extra: Any
) -> SimpleNamespace:
    metadata = {"case_id": case_id, "outcome": outcome, "cost_usd": 0.0, **extra}
    return SimpleNamespace(input="q", metadata=metadata, scores=scores, error=None, output=output)


def report(results: list[SimpleNamespace], capsys: pytest.CaptureFixture[str]) -> run_report.ExperimentReport:
    evaluator = SimpleNamespace(experiment_name="exp", eval_name="exp", metadata={"tool_count": 3})
    summary = SimpleNamespace(as_dict=lambda: {})
    made = run_report.report_eval(evaluator, SimpleNamespace(results=results, summary=summary), False, True)
    capsys.readouterr()
    return made


def test_judge_errors_over_the_share_fail_naming_the_first(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def factuality(metadata: dict[str, Any] | None = None, **_: Any) -> Score:
        failed = (metadata or {})["case_id"] in ("c1", "c2")
        extra = {"judge_error": f"HTTP 500 from the judge on {(metadata or {})['case_id']}"} if failed else {}
        return Score(name="factuality", score=None if failed else 1.0, metadata=extra)

    scorer = observed(factuality)
    assert scorer.__name__ == "factuality"  # Braintrust names the score span after it
    rows = [result(f"c{i}", {}, trial_key=f"key-{i}") for i in range(10)]
    for row in rows:
        row.scores["factuality"] = scorer(metadata=row.metadata).score
    made = report(rows, capsys)
    assert made.judge_errors == 2
    [reason] = experiment_failures(made, {})
    assert reason.startswith("the judge failed on 2/10 trials, over the 10% allowed")
    assert reason.endswith("first: factuality: HTTP 500 from the judge on c1")
    monkeypatch.setenv("EVAL_MAX_JUDGE_ERRORS", "0.2")
    forget_process_env()  # a run reads its settings once; this test changes them
    assert experiment_failures(made, {}) == []


def test_infrastructure_errors_over_the_share_fail(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [result(f"c{i}", {"tool_trajectory": 1.0}) for i in range(9)]
    rows.append(result("c9", {"tool_trajectory": None}, outcome="infra_error", error="server down: 503"))
    assert experiment_failures(report(rows, capsys), {}) == []  # 1/10 is at the limit, not over it
    rows.append(result("c10", {"tool_trajectory": None}, outcome="infra_error", error="again"))
    [reason] = experiment_failures(report(rows, capsys), {})
    assert "2/11 trials were infrastructure errors, over the 10% allowed" in reason
    assert reason.endswith("first: server down: 503")
    monkeypatch.setenv("EVAL_MAX_INFRA_ERRORS", "0.5")
    forget_process_env()  # a run reads its settings once; this test changes them
    assert experiment_failures(report(rows, capsys), {}) == []
    monkeypatch.setenv("EVAL_MAX_INFRA_ERRORS", "lots")
    forget_process_env()
    with pytest.raises(ValueError, match="EVAL_MAX_INFRA_ERRORS='lots' is not a share"):
        experiment_failures(report(rows, capsys), {})


def test_trials_without_an_answer_over_the_share_fail_naming_the_first(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that does nothing leaves main intact: integrity 100%, and the run used to pass."""
    rows = [result(f"c{i}", {"main_branch_integrity": 1.0}, output="Done.") for i in range(7)]
    rows.append(result("c7", {"main_branch_integrity": 1.0}, outcome="timeout", output=""))
    rows.append(result("c7b", {"main_branch_integrity": 1.0}, output="Done."))
    rows.append(result("c7c", {"main_branch_integrity": 1.0}, output="Done."))
    assert experiment_failures(report(rows, capsys), {}) == []  # 1/10 is at the limit, not over it
    rows.append(result("c8", {"main_branch_integrity": 1.0}, outcome="tool_call_as_text", output='{"name": "run_sql"}'))
    rows.append(result("c9", {"main_branch_integrity": 1.0}, output="  "))
    made = report(rows, capsys)
    assert made.no_answers == 3
    [reason] = experiment_failures(made, {})
    assert reason.startswith("3/12 trials ended without the model's answer, over the 10% allowed (EVAL_MAX_NO_ANSWERS)")
    assert reason.endswith("first: c7: outcome timeout")
    monkeypatch.setenv("EVAL_MAX_NO_ANSWERS", "0.3")
    forget_process_env()  # a run reads its settings once; this test changes them
    assert experiment_failures(made, {}) == []


def test_the_gates_verdict_is_in_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    evaluator = SimpleNamespace(experiment_name="exp", eval_name="exp", metadata={"tool_count": 3})
    rows = [result("c0", {"main_branch_integrity": 1.0}, outcome="turn_cap", output="")]
    run_report.report_eval(evaluator, SimpleNamespace(results=rows, summary=SimpleNamespace(as_dict=dict)), False, True)
    line = json.loads(capsys.readouterr().out.splitlines()[0])
    assert line["no_answers"] == 1 and line["gate"]["passed"] is False
    assert "EVAL_MAX_NO_ANSWERS" in line["gate"]["reasons"][0]


def test_floors_count_unjudged_trials_as_failures(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [result(f"c{i}", {"main_branch_integrity": 1.0, "factuality": None}) for i in range(9)]
    rows.append(result("c9", {"main_branch_integrity": None, "factuality": None}))
    made = report(rows, capsys)
    assert made.summary.scores["main_branch_integrity"].pass_rate == 1.0  # the summary leaves n/a out
    [reason] = experiment_failures(made, {"main_branch_integrity": 0.95})
    assert reason == "main_branch_integrity pass rate 90.0% (9/10, 1 n/a counted as failures) is under 95.0%"
    assert experiment_failures(made, {"main_branch_integrity": 0.9}) == []
    [no_judge] = experiment_failures(made, {"factuality": 0.5})
    assert no_judge.startswith("factuality pass rate 0.0% (0/10, 10 n/a")


def test_unknown_floor_names_are_refused() -> None:
    check_floor_names({"tool_trajectory": 1.0, "all_scores": 0.5}, run_report.score_names())
    with pytest.raises(ValueError, match="unknown score name\\(s\\) trajectory; known: main_branch_integrity"):
        check_floor_names({"trajectory": 0.9}, run_report.score_names())


def test_an_unknown_floor_stops_the_cli_before_any_trial(tmp_path: Path) -> None:
    results = tmp_path / "results"
    completed = run_cli(offline_env(results, EVAL_MIN_PASS="trajectory=0.9"), "evals/eval_tool_selection.py")
    assert completed.returncode != 0
    assert "EVAL_MIN_PASS: unknown score name(s) trajectory" in completed.stderr
    assert not list(results.rglob("trials.jsonl"))


def test_lost_uploads_and_records_fail_the_run() -> None:
    assert run_failures(0, None, []) == []
    [rows] = run_failures(7, "results/r/braintrust-failed", [])
    assert rows.startswith("7 row(s) uploaded to Braintrust were lost") and "results/r/braintrust-failed" in rows
    [records] = run_failures(0, None, ["disk full", "disk full"])
    assert records == "2 trial record(s) could not be written to results/; first: disk full"


def test_report_run_fails_on_lost_records(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    made = report([result("c1", {"tool_trajectory": 1.0})], capsys)
    assert run_report.report_run([made], False, True) is True
    monkeypatch.setattr(run_report, "_lost_records", lambda: ["results/r/trials.jsonl: No space left on device"])
    assert run_report.report_run([made], False, True) is False
    assert "FAIL 1 trial record(s) could not be written" in capsys.readouterr().err
