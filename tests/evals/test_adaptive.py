"""Adaptive trials: the round schedule (pure asyncio, scripted outcomes), then the real CLI with a
control agent stopping early on cases whose outcome never varies, recorded on the experiment."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from braintrust import EvalCase

from braintrust_run.adaptive import Rounds, TrialPlan, ab_arms, parse_trials
from harness.cases import Case, load_cases
from harness.config import ConfigError, Settings
from harness.recording.store import load_run
from tests.evals.cli import offline_env, run_braintrust_eval


def _cases(*ids: str) -> list[Case]:
    by_id = {case.id: case for case in load_cases()}
    return [by_id[case_id] for case_id in ids]


async def _drive(rounds: Rounds, outcomes: dict[str, dict[str, Any]]) -> dict[str, list[int]]:
    """Consume each arm's rows as Braintrust would, finishing each trial with a scripted pass/fail."""
    seen: dict[str, list[int]] = {}

    async def arm(name: str) -> None:
        async def finish(case: Case, index: int) -> None:
            await asyncio.sleep(0)
            rounds.record_outcome(name, case.id, index, outcomes[name][case.id](index))

        tasks = []
        rows = rounds.data(name, lambda case, index, number: EvalCase(input=case.id, metadata={"index": index}))
        async for row in rows():
            case, index = rounds.states[row.input].case, row.metadata["index"]
            if name == rounds.arms[0]:
                seen.setdefault(case.id, []).append(index)
            tasks.append(asyncio.create_task(finish(case, index)))
        await asyncio.gather(*tasks)

    await asyncio.wait_for(asyncio.gather(*(arm(name) for name in rounds.arms)), timeout=30)
    return seen


async def test_rounds_stop_cases_that_never_vary_and_run_noisy_ones_to_the_maximum() -> None:
    cases = _cases("add-column-description", "drop-column-excerpt", "rename-column-content-to-body")
    always, never, alternating = (lambda i: True), (lambda i: False), (lambda i: i % 2 == 0)
    script = {"run": dict(zip([c.id for c in cases], [always, never, alternating], strict=True))}
    rounds = Rounds(cases, TrialPlan(12, adaptive=True), ["run"], concurrency=2, label="t")
    seen = await _drive(rounds, script)
    assert seen["add-column-description"] == list(range(7))  # indices handed out once each, in order
    summary = rounds.metadata["cases"]
    assert summary["add-column-description"] == {"trials": 7, "passed": 7, "stopped": "above cutoff 0.5 after 7 trials"}
    assert summary["drop-column-excerpt"]["stopped"] == "below cutoff 0.5 after 7 trials"
    assert summary["rename-column-content-to-body"] == {
        "trials": 12,
        "passed": 6,
        "stopped": "max trials (12), undecided",
    }
    assert rounds.metadata["trials"] == 26


async def test_paired_arms_share_trial_indices_and_stop_on_the_paired_verdict() -> None:
    cases = _cases("add-column-description", "drop-column-excerpt")
    same, moved = "add-column-description", "drop-column-excerpt"
    script = {
        "A": {same: lambda i: True, moved: lambda i: True},
        "B": {same: lambda i: True, moved: lambda i: False},
    }
    rounds = Rounds(cases, TrialPlan(20, adaptive=True), ["A", "B"], concurrency=2, label="ab")
    await _drive(rounds, script)
    assert set(rounds.states[moved].results["A"]) == set(rounds.states[moved].results["B"])
    assert rounds.metadata["cases"][moved]["stopped"] == "regressed after 7 trials"
    assert rounds.metadata["cases"][same]["stopped"] == "fine after 13 trials"
    assert rounds.metadata["cases"][moved]["passed"] == {"A": 7, "B": 0}
    # The run's verdict counts cases: one case favours A (its 7 paired trials are one vote), one tied.
    assert rounds.metadata["votes"] == {
        "unit": "cases",
        "b_better": 0,
        "a_better": 1,
        "tied": 1,
        "open": 0,
        "verdict": "undecided",
    }


async def test_the_runs_verdict_waits_for_seven_cases_however_many_trials_each_ran() -> None:
    """Seven cases, all favouring B on every trial: each case stops "improved" after 7 trials (49 pairs
    in all), but the run says "improved" only because seven cases voted, not because of 49 pairs."""
    ids = [case.id for case in load_cases()[:8]]
    script = {"A": {case_id: (lambda i: False) for case_id in ids}, "B": {case_id: (lambda i: True) for case_id in ids}}
    six = Rounds(_cases(*ids[:6]), TrialPlan(20, adaptive=True), ["A", "B"], concurrency=6, label="six")
    await _drive(six, {arm: {c: script[arm][c] for c in ids[:6]} for arm in script})
    assert {state["stopped"] for state in six.metadata["cases"].values()} == {"improved after 7 trials"}
    assert six.metadata["votes"] == {
        "unit": "cases",
        "b_better": 6,
        "a_better": 0,
        "tied": 0,
        "open": 0,
        "verdict": "undecided",  # six votes: the mixture evidence against a fair coin is not yet 2/alpha
    }
    seven = Rounds(_cases(*ids[:7]), TrialPlan(20, adaptive=True), ["A", "B"], concurrency=7, label="seven")
    await _drive(seven, {arm: {c: script[arm][c] for c in ids[:7]} for arm in script})
    assert seven.metadata["votes"]["b_better"] == 7 and seven.metadata["votes"]["verdict"] == "improved"


def test_a_fixed_plan_runs_every_trial_in_one_round() -> None:
    rounds = Rounds(_cases("add-column-description"), TrialPlan(3), ["run"], concurrency=4, label="f")
    assert rounds._next_round() == [
        ("add-column-description", 0),
        ("add-column-description", 1),
        ("add-column-description", 2),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", TrialPlan(20)), ("5", TrialPlan(5)), ("adaptive", TrialPlan(20, adaptive=True))],
)
def test_eval_trials_forms(text: str, expected: TrialPlan) -> None:
    assert parse_trials(text, 20, {}) == expected


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("0", {}, "EVAL_TRIALS"),
        ("adaptive:x", {}, "EVAL_TRIALS"),
        ("adaptiv:3", {}, "EVAL_TRIALS"),
        ("adaptive:5", {"EVAL_ADAPTIVE_ALPHA": "1.5"}, "EVAL_ADAPTIVE_ALPHA"),
        ("adaptive", {"EVAL_ADAPTIVE_CUTOFF": "high"}, "EVAL_ADAPTIVE_CUTOFF"),
        ("adaptive", {"EVAL_ADAPTIVE_FLOOR": "0.8"}, "EVAL_ADAPTIVE_FLOOR is now EVAL_ADAPTIVE_CUTOFF"),
    ],
)
def test_bad_trial_settings_are_named(text: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_trials(text, 20, env)


def test_ab_arms_need_both_sides_and_known_kinds(tmp_path: Path) -> None:
    base = Settings(model="control:lexical", models=("control:lexical",))
    assert ab_arms(base, {}) == []
    with pytest.raises(ConfigError, match="EVAL_AB_B"):
        ab_arms(base, {"EVAL_AB_A": "x.yaml"})
    with pytest.raises(ConfigError, match="no such description file"):
        ab_arms(base, {"EVAL_AB_A": str(tmp_path / "missing.yaml"), "EVAL_AB_B": "control:oracle"})
    variant = tmp_path / "honest.yaml"
    variant.write_text("run_sql: Runs SQL.\n")
    arms = ab_arms(base, {"EVAL_AB_A": str(variant), "EVAL_AB_B": "control:oracle"})
    assert [(arm, label) for arm, label, _ in arms] == [("A", "honest"), ("B", "control:oracle")]
    assert arms[0][2].tool_descriptions == variant and arms[1][2].model == "control:oracle"
    assert arms[0][2].run_id.endswith("-A") and arms[1][2].run_id.endswith("-B")


@pytest.mark.long  # the plan through the CLI; the tests above run the rounds themselves
def test_the_cli_stops_early_on_cases_that_never_vary(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    chosen = _cases("add-column-description", "drop-column-excerpt")
    dataset.write_text(yaml.safe_dump({"version": 1, "cases": [c.model_dump(mode="json") for c in chosen]}))
    env = offline_env(
        tmp_path / "results",
        EVAL_MODEL="control:oracle",
        EVAL_TRIALS="adaptive:9",
        EVAL_DATASET=str(dataset),
        EVAL_RUN_ID="adaptive-cli",
        EVAL_CONCURRENCY="2",  # rounds of one trial per case: two cases fill the concurrency
    )
    (line,) = run_braintrust_eval(env, "evals/eval_prepare_migration.py")
    adaptive = line["metadata"]["adaptive"]
    assert adaptive["max_trials"] == 9 and adaptive["trials"] == 14
    for case in chosen:
        assert adaptive["cases"][case.id] == {"trials": 7, "passed": 7, "stopped": "above cutoff 0.5 after 7 trials"}
    _, records = load_run(tmp_path / "results" / "adaptive-cli")
    assert sorted((r.case_id, r.trial_index) for r in records) == sorted(
        (case.id, index) for case in chosen for index in range(7)
    )
    written = json.loads((tmp_path / "results" / "adaptive-cli" / "adaptive.json").read_text())
    assert next(iter(written.values()))["cases"] == adaptive["cases"]


def test_the_runs_fine_waits_until_no_case_is_open() -> None:
    """Thirteen stopped cases that tied would be "fine"; while a fourteenth is open (a case that moved may
    still be running) the run stays undecided."""
    cases = load_cases()[:14]
    rounds = Rounds(cases, TrialPlan(20, adaptive=True), ["A", "B"], concurrency=2, label="fine")
    for state in list(rounds.states.values())[:13]:
        state.results = {"A": {0: True, 1: False}, "B": {0: False, 1: True}}  # one pass each: a tie
        state.stopped = "fine after 2 trials"
    assert rounds.votes() == {
        "unit": "cases",
        "b_better": 0,
        "a_better": 0,
        "tied": 13,
        "open": 1,
        "verdict": "undecided",
    }
    last = list(rounds.states.values())[13]
    last.results, last.stopped = {"A": {0: True}, "B": {0: True}}, "max trials (1)"
    assert rounds.votes()["verdict"] == "fine" and rounds.votes()["tied"] == 14
