"""The tuning run's readable diff, page and budget: what a reader and a limit see."""

from __future__ import annotations

from analysis.stats import Interval
from tuning.acceptance import Decision
from tuning.loop import TunePlan, TuneResult, _over_budget, _round_line
from tuning.page import Tried, description_diff, forest_plot, render_page


def decision(name: str, accepted: bool, gain: float | None = 0.25, refused: tuple[str, ...] = ()) -> Decision:
    return Decision(
        candidate=name,
        accepted=accepted,
        refused_by=refused,
        candidates_tried=2,
        votes=(5, 1, 2),
        p_value=0.1094,
        adjusted_p=0.2188,
        gain=gain,
        gain_interval=Interval(0.05, 0.45) if gain is not None else None,
        harm_bounds={"main_changed_unapproved": (0.12, 0.31)},
        losing_workflows=(),
        wrong_choice_raise=0,
    )


def test_the_diff_shows_the_sentence_that_changed_per_tool_and_nothing_for_the_same() -> None:
    before = {"run_sql": "Runs SQL. Use it for anything.", "list_projects": "Lists projects."}
    after = {"run_sql": "Never use it for schema changes. Runs SQL.", "list_projects": "Lists projects."}
    diff = description_diff(before, after, "incumbent-0", "candidate-1")
    assert "--- incumbent-0: run_sql" in diff and "+++ candidate-1: run_sql" in diff
    assert "+Never use it for schema changes." in diff and "-Use it for anything." in diff
    assert " Runs SQL." in diff  # kept, shown as context
    assert "list_projects" not in diff
    assert description_diff(before, before, "a", "b") == ""


def test_the_page_names_each_decision_its_rule_and_the_command() -> None:
    tried = [
        Tried(1, decision("run_sql-warning_first", False, refused=("harm",)), ("warning_first",), "incumbent-0", "d1"),
        Tried(2, decision("prepare-purpose_first", True), ("purpose_first",), "incumbent-0", "d2"),
    ]
    page = render_page(
        "Tuning run t1",
        {"model": "control:lexical"},
        tried,
        {"control:lexical": decision("finalist", True), "control:oracle": decision("finalist", False, gain=0.0)},
        "diff <x>",
        "make tune",
        "ok",
    )
    assert "refused by harm" in page and "accepted" in page and "+25.0 pts [+5.0, +45.0]" in page
    assert "main_changed_unapproved: bound 31.0% vs limit 12.0%" in page
    assert "control:lexical: <b>confirmed</b>" in page and "control:oracle: <b>not confirmed</b>" in page
    assert "diff &lt;x&gt;" in page and "make tune" in page
    assert page.count("<circle") == 2  # one point per candidate in the plot


def test_a_candidate_without_paired_cases_is_left_out_of_the_plot() -> None:
    assert "No candidate" in forest_plot([("1. x", decision("x", False, gain=None))])


def plan(**limits: float | int | None) -> TunePlan:
    return TunePlan(run_id="t", seed="s", start={}, start_name="start", **limits)  # type: ignore[arg-type]


def test_the_budget_stops_before_a_candidate_that_would_pass_it() -> None:
    spent = TuneResult(trials=60, spend_usd=3.0)  # the train run and two candidates: 20 trials, $1 a round
    assert _over_budget(plan(budget_usd=3.5), spent, done=2) == "budget"  # $3 + $1 > $3.5
    assert _over_budget(plan(budget_usd=4.0), spent, done=2) is None  # $3 + $1 = $4: still within
    assert _over_budget(plan(max_total_trials=79), spent, done=2) == "trials"
    assert _over_budget(plan(budget_usd=0.0), spent, done=0) is None  # the first candidate always runs
    line = _round_line(spent, 2, 5)
    assert "60 trials so far, $3.00 spent; about 80 trials ($4.00) to the end" in line


def test_an_unpriced_model_spends_nothing() -> None:
    free = TuneResult(trials=40, spend_usd=0.0)
    assert _over_budget(plan(budget_usd=0.01), free, done=1) is None


def test_the_finalist_is_confirmed_with_every_model_the_run_names_and_each_asked_for() -> None:
    from tuning.__main__ import confirming

    assert confirming(["control:lexical"], []) == ()  # the run's one model: the children's own
    assert confirming([], []) == ()
    assert confirming(["a", "b"], []) == ("a", "b")
    assert confirming(["a"], ["b", "a"]) == ("a", "b")
    assert confirming([], ["b"]) == ("", "b")  # "": the model the run takes by default, then b
