"""One registry of scorers: every reader (Braintrust wiring, compare, report) sees the same list."""

from __future__ import annotations

import asyncio

import pytest

from analysis import report
from analysis.rescore import DETERMINISTIC_NAMES
from scorers import adapters, registry
from tests.scorers.conftest import case, record

ALL = [
    "main_branch_integrity",
    "data_integrity",
    "tool_trajectory",
    "temporary_branch_cleanup",
    "main_safety",
    "factuality",
]
# The ones a past run can be re-scored with offline: all but the judge.
DETERMINISTIC = [name for name in ALL if name != "factuality"]


def test_the_registry_lists_each_scorer_once_in_order() -> None:
    assert list(registry.NAMES) == ALL
    assert [spec.name for spec in registry.DETERMINISTIC] == DETERMINISTIC
    assert not registry.spec("factuality").deterministic and registry.spec("factuality").is_async


def test_every_reader_takes_its_names_from_the_registry() -> None:
    assert [adapter.__name__ for adapter in adapters.SCORERS] == ALL
    assert list(DETERMINISTIC_NAMES) == DETERMINISTIC
    assert [*DETERMINISTIC, "all_scores"] == report.NAMES


def test_unknown_names_are_errors_listing_the_known_ones() -> None:
    with pytest.raises(registry.UnknownScorer, match="known: main_branch_integrity"):
        registry.spec("trajectory")
    with pytest.raises(registry.UnknownScorer, match="no adapter"):
        adapters.by_name("nope")


def test_an_async_scorer_cannot_be_run_synchronously() -> None:
    factuality = registry.spec("factuality")
    with pytest.raises(TypeError, match="asynchronous"):
        factuality.score(record("read-count-posts"), case("read-count-posts"))


def test_explainers_turn_metadata_into_lines() -> None:
    assert registry.spec("tool_trajectory").explain({"failed_checks": ["a", "b"], "reason": "x"}) == ["a", "b"]
    assert registry.spec("data_integrity").explain({"unexpected_writes": ["public.t: rows 1 → 2"]}) == [
        "public.t: rows 1 → 2"
    ]
    assert registry.spec("temporary_branch_cleanup").explain({"branches_left": ["b1"]}) == ["b1"]
    assert registry.spec("main_branch_integrity").explain({"diff": "--- a\n+++ b"}) == ["--- a\n+++ b"]
    assert registry.spec("main_branch_integrity").explain({}) == []
    factuality = registry.spec("factuality").explain({"judge_error": "boom", "choice": "D", "rationale": "why"})
    assert factuality == ["judge error: boom", "judge chose D", "why"]


def test_a_deterministic_scorer_gives_the_same_score_through_the_registry_and_the_adapter() -> None:
    trial, bundled = record("read-count-posts"), case("read-count-posts")
    direct = registry.spec("tool_trajectory").score(trial, bundled)
    metadata = {"trial": trial.model_dump(mode="json"), "case": bundled.model_dump(mode="json")}
    via_adapter = adapters.by_name("tool_trajectory")(metadata=metadata)
    assert (direct.score, direct.metadata) == (via_adapter.score, via_adapter.metadata)
    assert asyncio.iscoroutinefunction(adapters.by_name("factuality"))
