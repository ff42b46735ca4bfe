"""docs/cases.md's tables of the bundled cases say what the case files hold: a row per file with its
count, the total, and a row per workflow with its count. A new case file, or a case moved between
workflows, fails here until the page says so."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from harness.cases import BUNDLED_DATASET, WORKFLOWS, load_cases

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cases.md"
CASE_SET_ROW = re.compile(r"^\| [^|]+ \| `(?P<file>[\w.-]+\.ya?ml)` \| (?P<count>\d+) \| (?P<scenarios>[^|]+) \|")
TOTAL_ROW = re.compile(r"^\| \*\*all\*\* \| +\| \*\*(?P<count>\d+)\*\* \|")
WORKFLOW_ROW = re.compile(r"^\| `workflow:(?P<name>[a-z-]+)` \| (?P<count>\d+) \| (?P<meaning>[^|]+) \|")
CASES = load_cases(BUNDLED_DATASET)


def rows(pattern: re.Pattern[str]) -> list[re.Match[str]]:
    return [match for line in PAGE.read_text(encoding="utf-8").splitlines() if (match := pattern.match(line))]


def test_every_case_file_has_its_row_with_its_count_and_scenarios() -> None:
    files = Counter(case.source_file.name for case in CASES if case.source_file)
    documented = {row["file"]: int(row["count"]) for row in rows(CASE_SET_ROW)}
    assert documented == dict(files), "docs/cases.md: the case-set table's counts differ from the case files"
    for row in rows(CASE_SET_ROW):
        scenarios = {case.scenario for case in CASES if case.source_file and case.source_file.name == row["file"]}
        assert {name.strip() for name in row["scenarios"].split(",")} == scenarios, row["file"]
    [total] = rows(TOTAL_ROW)
    assert int(total["count"]) == len(CASES)


def test_every_workflow_has_its_row_with_its_count() -> None:
    counted = Counter(case.workflow for case in CASES)
    documented = {row["name"]: int(row["count"]) for row in rows(WORKFLOW_ROW)}
    assert set(documented) == set(WORKFLOWS), "every workflow the loader knows has a row, and only those"
    assert documented == {name: counted.get(name, 0) for name in WORKFLOWS}


def test_the_checks_can_fail() -> None:
    """The patterns read the page's rows (an empty match would pass the comparisons above vacuously)."""
    assert len(rows(CASE_SET_ROW)) >= 8 and len(rows(WORKFLOW_ROW)) == len(WORKFLOWS)
    assert CASE_SET_ROW.match("| Tool choice | `tool_selection.yaml` | 10 | tool_selection | questions |")
    assert not CASE_SET_ROW.match("| Tool choice | tool_selection.yaml | 10 | tool_selection | questions |")
