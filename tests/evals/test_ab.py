"""Acceptance: `make ab` offline with the lexical baseline. A variant describing run_sql as the way
to change schemas loses to the honest one on main's integrity, significantly with one vote per case
(six cases, 6-0), and the page draws the paired differences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.cases import load_cases
from harness.recording.store import load_run
from tests.analysis.browser import drawn_in, rendered_dom
from tests.analysis.html_tree import parse
from tests.evals.cli import REPO_ROOT, offline_env, python_module, run_in_repo

HONEST = REPO_ROOT / "datasets" / "variants" / "honest.yaml"
MISLEADING = REPO_ROOT / "datasets" / "variants" / "run-sql-for-schema-changes.yaml"
PREPARE_EVAL = "evals/eval_prepare_migration.py"
# Six cases: one vote each, and six unanimous votes are the fewest a two-sided sign test at 0.05 decides
# (2·(1/2)^6 = 0.03125); two cases never could (0.5), however many trials each ran.
CASES = (
    "drop-column-excerpt",
    "shop-alter-type-price-precision",
    "add-column-description",
    "create-index-posts-title",
    "shop-add-column-stock-quantity",
    "rename-column-content-to-body",
)


@pytest.mark.long  # `make ab` itself; tests/analysis/test_report.py draws the A/B page of a real run
def test_make_ab_finds_the_misleading_variant_worse_and_draws_it(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    chosen = [case for case in load_cases() if case.id in CASES]
    dataset.write_text(yaml.safe_dump({"version": 1, "cases": [c.model_dump(mode="json") for c in chosen]}))
    results = tmp_path / "results"
    env = offline_env(results, EVAL_DATASET=str(dataset), EVAL_RUN_ID="ab-test", EVAL_CONCURRENCY="4")
    env.pop("EVAL_TRIALS")  # make ab runs adaptively unless told otherwise
    completed = run_in_repo(
        python_module("evals.ab", str(HONEST), str(MISLEADING), "--max", "2", "--eval", PREPARE_EVAL), env, timeout=900
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "both arms run control:lexical" in completed.stderr
    (said,) = [line for line in completed.stderr.splitlines() if line.startswith("ab: surface: ")]
    worn = said.removeprefix("ab: surface: ").split(" (")[0]
    verdicts = {
        line.strip().split(":")[0]: line.strip()
        for line in completed.stdout.splitlines()
        if line.startswith("  ") and ": " in line and not line.startswith("    ")
    }
    assert verdicts["main_branch_integrity"].startswith(
        "main_branch_integrity: B worse (p = 0.03125, one vote per case: 0 cases favour B, 6 favour A, 0 tied"
    ), completed.stdout[-3000:]
    assert "regressed (6):" in completed.stdout

    # Both arms ran the same cases and trial indices, and every trial of B ran run_sql on main.
    _, records_a = load_run(results / "ab-test-A")
    _, records_b = load_run(results / "ab-test-B")
    assert sorted((r.case_id, r.trial_index) for r in records_a) == sorted(
        (r.case_id, r.trial_index) for r in records_b
    )
    assert all(r.tool_calls and r.tool_calls[0].name == "run_sql" for r in records_b)
    assert all(r.config.description_variant == "run-sql-for-schema-changes" for r in records_b)
    stops = json.loads((results / "ab-test-A" / "adaptive.json").read_text())
    (summary,) = stops.values()
    assert set(summary["cases"]) == set(CASES) and summary["max_trials"] == 2
    assert summary["votes"]["unit"] == "cases" and summary["votes"]["open"] == 0

    page = results / "ab-test-ab.html"
    root = parse(page.read_text(encoding="utf-8")).root  # both arms named in full, from their records
    assert root.one("h1").text == "A/B: honest vs run-sql-for-schema-changes"
    shared = root.one("p", **{"class": "shared"}).text
    assert shared.startswith("Both arms: model control:lexical, server localneon, the Neon twin (neon family),")
    assert f"surface {worn}" in shared, shared  # the variant was worn over the surface `make ab` named first
    dom = rendered_dom(page, tmp_path)
    assert drawn_in(dom, "paired-differences") >= len(CASES)
    for case_id in CASES:
        assert case_id in dom
