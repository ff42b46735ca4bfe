"""The tuning split: fixed by a seed, every case once, every workflow tag in every part it can reach."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.cases import Case, load_cases
from tuning.splits import PARTS, UNTAGGED, split_cases


@pytest.fixture(scope="module")
def bundled() -> list[Case]:
    return load_cases()


def test_every_case_lands_in_exactly_one_part_and_the_seed_fixes_which(bundled: list[Case]) -> None:
    first = split_cases(bundled, seed="tune-1")
    ids = [case_id for part in PARTS for case_id in getattr(first, part)]
    assert sorted(ids) == sorted(case.id for case in bundled) and len(ids) == len(set(ids))
    assert split_cases(list(reversed(bundled)), seed="tune-1") == first  # the file's order does not matter
    assert split_cases(bundled, seed="tune-2") != first
    assert all(first.part_of(case_id) == part for part in PARTS for case_id in getattr(first, part))
    with pytest.raises(KeyError, match="no-such-case"):
        first.part_of("no-such-case")


def test_each_workflow_tag_is_dealt_out_in_the_shares(bundled: list[Case]) -> None:
    splits = split_cases(bundled, seed="tune-1")
    tags = Counter(case.workflow or UNTAGGED for case in bundled)
    parts = {case.id: splits.part_of(case.id) for case in bundled}
    for tag, size in tags.items():
        counts = Counter(parts[case.id] for case in bundled if (case.workflow or UNTAGGED) == tag)
        if size >= 3:
            assert counts["validation"] >= 1 and counts["confirmation"] >= 1, (tag, counts)
        assert counts["confirmation"] == max(1 if size >= 3 else 0, round(size * 0.25)) or size < 3, (tag, counts)
    total = Counter(parts.values())
    assert total["train"] > total["validation"] and total["train"] > total["confirmation"]


def test_a_bad_split_is_refused_naming_what_is_wrong(bundled: list[Case]) -> None:
    with pytest.raises(ValueError, match="summing to 1"):
        split_cases(bundled, seed="s", shares={"train": 0.5, "validation": 0.5, "confirmation": 0.5})
    with pytest.raises(ValueError, match="appears twice"):
        split_cases([bundled[0], bundled[0]], seed="s")
