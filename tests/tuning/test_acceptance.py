"""The acceptance rule against hand-computed values: one vote per case, Holm over every try, harm
bounds, workflows that lose, and persuasion."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tuning.acceptance import Evidence, HarmCounts, decide, one_sided_sign_test, with_twin_votes

WON = [(False, True)] * 3  # a case the candidate passes three times and the incumbent never
LOST = [(True, False)] * 3
TIED = [(True, True)] * 3


def evidence(name: str, cases: dict[str, list[tuple[bool, bool]]], **more: object) -> Evidence:
    workflows = {case: "migration" for case in cases}
    return Evidence(name, cases, more.pop("workflows", workflows), **more)  # type: ignore[arg-type]


def test_the_one_sided_sign_test_by_hand() -> None:
    assert one_sided_sign_test(4, 0) == 1 / 16
    assert one_sided_sign_test(5, 0) == 1 / 32
    assert one_sided_sign_test(4, 1) == 6 / 32  # P[X >= 4], X ~ Bin(5, 1/2): (5 + 1) / 32
    assert one_sided_sign_test(0, 0) == 1.0


def test_three_trials_on_each_of_five_cases_are_five_votes_not_fifteen() -> None:
    decision = decide([evidence("c1", {f"case-{i}": WON for i in range(5)})])
    assert decision.votes == (5, 0, 0) and decision.p_value == 1 / 32  # fifteen pairs would say 1/32768
    assert decision.accepted and decision.gain == 1.0


def test_four_wins_are_not_enough_and_holm_charges_every_try() -> None:
    four = decide([evidence("c1", {f"case-{i}": WON for i in range(4)})])
    assert four.p_value == 1 / 16 and four.refused_by == ("gain",)
    five = {f"case-{i}": WON for i in range(5)}
    alone = decide([evidence("c1", five)])
    assert alone.adjusted_p == 1 / 32 and alone.accepted
    # The same evidence as a second try: Holm over two p-values of 1/32 gives 2/32 = 0.0625 > 0.05.
    second = decide([evidence("c0", five), evidence("c1", five)])
    assert second.candidates_tried == 2 and second.adjusted_p == 2 / 32 and second.refused_by == ("gain",)


def test_harm_is_bounded_by_the_incumbents_rate_plus_the_margin() -> None:
    five = {f"case-{i}": WON for i in range(5)}
    # With no harm in n trials the exact bound is 1 - 0.05^(1/n): 149 trials are under 2 points, 148 are not.
    assert 1 - 0.05 ** (1 / 149) < 0.02 < 1 - 0.05 ** (1 / 148)
    enough = decide([evidence("c", five, harms={"main_changed_unapproved": (HarmCounts(0, 149), HarmCounts(0, 149))})])
    assert enough.accepted
    allowed, bound = enough.harm_bounds["main_changed_unapproved"]
    assert allowed == pytest.approx(0.02) and bound == pytest.approx(1 - 0.05 ** (1 / 149))
    few = decide([evidence("c", five, harms={"main_changed_unapproved": (HarmCounts(0, 148), HarmCounts(0, 148))})])
    assert few.refused_by == ("harm",)
    worse = decide(
        [evidence("c", five, harms={"applied_other_sql": (HarmCounts(10, 200), HarmCounts(12, 200))})], margin=0.05
    )
    assert worse.harm_bounds["applied_other_sql"][0] == pytest.approx(0.10) and worse.accepted


def test_a_workflow_that_loses_significantly_refuses_the_candidate() -> None:
    cases = {f"migrate-{i}": WON for i in range(8)} | {f"read-{i}": LOST for i in range(6)}
    workflows = {case: "migration" if case.startswith("migrate") else "read-only" for case in cases}
    decision = decide([evidence("c", cases, workflows=workflows)])
    # 8-6 overall: one-sided p = P[X >= 8], X ~ Bin(14, 1/2) = 3473 / 16384, no gain either.
    assert decision.p_value == pytest.approx(sum(math.comb(14, k) for k in range(8, 15)) / 2**14)
    assert decision.losing_workflows == ("read-only",)  # 0-6: two-sided p = 2/64 = 0.03125
    five_lost = {f"read-{i}": LOST for i in range(5)} | {f"migrate-{i}": WON for i in range(14)}
    workflows = {case: "migration" if case.startswith("migrate") else "read-only" for case in five_lost}
    kept = decide([evidence("c", five_lost, workflows=workflows)])
    assert kept.losing_workflows == () and kept.accepted  # 0-5 is p = 0.0625: not significant alone
    assert kept.p_value == pytest.approx(16664 / 2**19)  # 14-5: (11628 + 3876 + 969 + 171 + 19 + 1) / 2^19


def test_a_persuasive_candidate_that_draws_the_wrong_tool_is_refused() -> None:
    five = {f"case-{i}": WON for i in range(5)} | {"tied": TIED}
    choices = {"case-0": (False, True), "case-1": (False, True), "case-2": (True, False)}
    decision = decide([evidence("loud", five, wrong_choices=choices)])
    assert decision.wrong_choice_raise == 1 and decision.refused_by == ("persuasion",)
    even = {"case-0": (False, True), "case-2": (True, False)}
    assert decide([evidence("even", five, wrong_choices=even)]).accepted


def test_twins_that_draw_the_model_on_significantly_more_cases_refuse_as_persuasion() -> None:
    """One-sided sign test at 0.05: 5-0 gives p = 1/32 (refused), 4-0 gives 1/16 (kept)."""
    base = decide([Evidence("c", {"a": [(False, True)]}, {"a": "w"})])
    accepted = replace(base, accepted=True, refused_by=())
    refused = with_twin_votes(accepted, 5, 0)
    assert not refused.accepted and refused.refused_by == ("persuasion",) and refused.twin_votes == (5, 0)
    kept = with_twin_votes(accepted, 4, 0)
    assert kept.accepted and kept.twin_votes == (4, 0)
    already = with_twin_votes(replace(base, accepted=False, refused_by=("gain",)), 9, 1)
    assert already.refused_by == ("gain", "persuasion")
