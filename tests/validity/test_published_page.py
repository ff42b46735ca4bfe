"""`docs/validity.md` is what `make validity` wrote for the code and library in this checkout.

The page is generated (`validity.page.render_page`); a person never edits it. It names a fingerprint of
everything its verdicts depend on (behaviours, cases, fixtures, scorers, the lab), so a change to any of
them fails here until the lab is run again and the page rewritten, as the README's samples are held to
the code that prints them. What can be checked without playing the behaviours is checked exactly: the
coverage table and the counts are recomputed from the library.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cases import load_cases
from scorers.registry import SCORERS
from scorers.versions import version_of
from validity.behaviours import BUNDLED_BEHAVIOURS, REPO_ROOT, load_behaviours
from validity.page import FINGERPRINT_MARK, LabReport, coverage, inputs_fingerprint, lab_scorer_versions

PAGE = REPO_ROOT / "docs" / "validity.md"
CASES = {case.id: case for case in load_cases()}
BEHAVIOURS = load_behaviours(BUNDLED_BEHAVIOURS, CASES)
REGENERATE = "make validity"


def page_text() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_the_page_was_written_for_these_inputs() -> None:
    [named] = [line for line in page_text().splitlines() if line.startswith(FINGERPRINT_MARK)]
    assert named == f"{FINGERPRINT_MARK}{inputs_fingerprint()} -->", (
        f"docs/validity.md is stale: behaviours, cases, fixtures, scorers or the lab changed; run `{REGENERATE}`"
    )


def _normalised(requirement: str) -> str:
    name, _, version = requirement.partition("==")
    return f"{re.sub(r'[-_.]+', '-', name).lower()}=={version}"


def test_every_package_a_scorer_imports_is_pinned_where_the_page_was_made() -> None:
    """The packages a scorer imports are part of its version, hence of the page's fingerprint: a fresh
    clone must install the very versions (constraints.txt), or an upstream release makes the page
    stale on CI and nowhere else (it did: openai and httpx2 moved under a `>=` range)."""
    pins = {
        _normalised(line.strip())
        for line in (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    }
    imported = {part for spec in SCORERS for part in version_of(spec).parts if "==" in part}
    assert imported, "the scorers' versions name no installed package; the walk lost its imports"
    unpinned = sorted(part for part in imported if _normalised(part) not in pins)
    advice = "run `make` to follow the pins, or `make lock`"
    assert not unpinned, f"installed, not as constraints.txt pins them ({advice}): {unpinned}"


def test_the_fingerprint_moves_with_any_input_and_not_with_the_checkouts_path(tmp_path: Path) -> None:
    """A copy of the inputs in a folder with spaces hashes the same; one changed byte of a scorer does not."""
    copy = tmp_path / "a checkout with spaces"
    for pattern in ("datasets/validity", "datasets/cases", "datasets/fixtures", "scorers", "validity"):
        for source in (REPO_ROOT / pattern).iterdir():
            if source.is_file():
                target = copy / pattern / source.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read_bytes())
    versions = lab_scorer_versions()
    assert inputs_fingerprint(copy, versions) == inputs_fingerprint(REPO_ROOT, versions)
    scorer = copy / "scorers" / "main_safety.py"
    scorer.write_bytes(scorer.read_bytes() + b"\n")
    assert inputs_fingerprint(copy, versions) != inputs_fingerprint(REPO_ROOT, versions)
    moved = {**versions, "main_safety": "000000000000"}  # a helper in harness/ changed a scorer's verdict
    assert inputs_fingerprint(REPO_ROOT, moved) != inputs_fingerprint(REPO_ROOT, versions)


def test_the_counts_and_coverage_are_the_librarys() -> None:
    text = page_text()
    labels = {label: sum(1 for b in BEHAVIOURS if b.label == label) for label in ("good", "harmful", "wrong")}
    assert (
        f"{len(BEHAVIOURS)} labelled behaviours ({labels['good']} good, {labels['harmful']} harmful, "
        f"{labels['wrong']} wrong)" in text
    )
    table = "\n".join(coverage(LabReport(behaviours=BEHAVIOURS, cases=CASES, runs=[])))
    assert table in text


def test_every_disagreement_the_page_lists_is_a_known_limit() -> None:
    """A page CI publishes has no unexplained disagreement (`make validity` exits 1 on one)."""
    text = page_text()
    assert "**not explained**" not in text and "**unexpected**" not in text
    known = {b.id for b in BEHAVIOURS if b.known_limit}
    listed = set(re.findall(r"^- `([^`]+)`: `[^`]+` (?:false alarm|miss) \(known limit\)", text, re.M))
    assert listed <= known, sorted(listed - known)


@pytest.mark.parametrize("server", ["local", "neon-npm"])
def test_the_page_reports_each_server_the_lab_plays(server: str) -> None:
    text = page_text()
    [heading] = [line for line in text.splitlines() if line.startswith(f"## On `EVAL_SERVER={server}`")]
    played = int(re.search(r"\((\d+) behaviours played\)", heading).group(1))  # type: ignore[union-attr]
    assert played == sum(1 for b in BEHAVIOURS if server in b.servers)


def test_the_summary_line_is_on_the_page() -> None:
    """The page ends its rates with the JSON line the run printed, so CI and a reader see the same numbers."""
    [line] = [line for line in page_text().splitlines() if line.startswith('{"validity"')]
    body = json.loads(line)["validity"]
    assert body["behaviours"] == len(BEHAVIOURS) and body["false_alarms"] == 0 and body["misses"] == 0
    assert body["cases_a_baseline_passes"] == [] and body["baselines"]
