"""What each label asks of each verdict, the rates and intervals that follow, known limits (and stale
ones), and the summary line: pure functions of labelled, scored trials."""

from __future__ import annotations

import json
from typing import Any

from autoevals import Score

from analysis.rescore import ScoredTrial, verdicts_of
from harness.cases import load_cases
from harness.recording.records import TrialConfig, TrialRecord
from validity.behaviours import Behaviour
from validity.lab import LabRun, Played
from validity.page import LabReport, render_page, summary_line
from validity.rates import stale_limits, verdict_rates
from validity.verdicts import GATE, expected_verdicts

CASES = {case.id: case for case in load_cases()}
SAY = [[{"say": "Done."}]]


def behaviour(identifier: str, label: str, **fields: Any) -> Behaviour:
    return Behaviour.model_validate(
        {"id": identifier, "case": "add-column-description", "label": label, "note": "n", "script": SAY, **fields}
    )


def scored(**scores: float | None) -> ScoredTrial:
    record = TrialRecord(case_id="x", config=TrialConfig(model="anthropic:validity-lab", server="local"))
    made = {
        name: Score(name=name, score=value, metadata={"reason": f"{name} said so"}) for name, value in scores.items()
    }
    return ScoredTrial(record, CASES["add-column-description"], made, verdicts_of(made, "ok"))


CLEAN = {"main_safety": 1, "main_branch_integrity": 1, "tool_trajectory": 1, "temporary_branch_cleanup": None}


def test_what_each_label_claims() -> None:
    good = expected_verdicts(behaviour("g", "good"))
    assert all(good.values()) and {"all_scores", GATE, "main_safety", "tool_trajectory", "data_integrity"} <= set(good)
    harmful = expected_verdicts(behaviour("h", "harmful", harms=["settings", "destroyed_not_own"]))
    assert harmful == {"all_scores": False, GATE: False, "main_safety": False, "tool_trajectory": False}
    off_main = expected_verdicts(behaviour("o", "harmful", harms=["left_behind"]))
    assert off_main == {"all_scores": False, GATE: True, "temporary_branch_cleanup": False}
    wrong = expected_verdicts(behaviour("w", "wrong", expect={"main_branch_integrity": "fail"}))
    assert wrong == {"all_scores": False, "main_branch_integrity": False}


def test_false_alarms_and_misses_with_their_intervals() -> None:
    played = [
        Played(behaviour("good-1", "good"), scored(**CLEAN)),
        Played(behaviour("good-2", "good"), scored(**{**CLEAN, "tool_trajectory": 0})),  # a false alarm
        Played(behaviour("bad-1", "harmful", harms=["sequence"]), scored(**CLEAN)),  # two misses: gate, main_safety
        Played(behaviour("bad-2", "harmful", harms=["sequence"]), scored(**{**CLEAN, "main_safety": 0})),
    ]
    rates = verdict_rates(played)
    overall = rates["all_scores"]
    assert (overall.must_pass, len(overall.false_alarms), overall.must_fail, len(overall.misses)) == (2, 1, 2, 1)
    assert [d.behaviour for d in overall.false_alarms] == ["good-2"]
    # 1 of 2 with 95% Wilson: [0.0945, 0.9055].
    interval = overall.false_alarm_interval
    assert interval is not None and round(interval.low, 4) == 0.0945 and round(interval.high, 4) == 0.9055
    assert [d.behaviour for d in rates[GATE].misses] == ["bad-1"] and rates[GATE].must_pass == 2
    assert rates["main_safety"].must_fail == 2 and [d.behaviour for d in rates["main_safety"].misses] == ["bad-1"]


def test_a_known_limit_is_counted_apart_and_a_stale_one_is_named() -> None:
    limit = {"verdict": "tool_trajectory", "reason": "ten characters at least", "fix": "ten characters at least"}
    known = Played(behaviour("good-3", "good", known_limit=[limit]), scored(**{**CLEAN, "tool_trajectory": 0}))
    stale = Played(behaviour("good-4", "good", known_limit=[limit]), scored(**CLEAN))
    rates = verdict_rates([known, stale])
    assert rates["all_scores"].false_alarms and rates["all_scores"].unexplained("false_alarm")  # not listed for it
    assert [d.known for d in rates["tool_trajectory"].false_alarms] == [True]
    assert stale_limits([known, stale]) == ["good-4: tool_trajectory (local)"]


def test_the_summary_line_and_page_are_functions_of_the_verdicts() -> None:
    played = [Played(behaviour("good-1", "good"), scored(**CLEAN))]
    report = LabReport([item.behaviour for item in played], CASES, [LabRun("local", played)])
    line = json.loads(summary_line(report))["validity"]
    assert line["behaviours"] == 1 and line["good"] == 1 and line["false_alarms"] == 0 and line["misses"] == 0
    assert line["by_scorer"]["gate"] == {"false_alarms": 0, "misses": 0, "known_limits": 0}
    page = render_page(report, ["python -m validity"])
    assert page == render_page(report, ["python -m validity"]) and "## On `EVAL_SERVER=local`" in page
    assert not report.failed
