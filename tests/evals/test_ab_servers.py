"""The server-design A/B: the same cases and model on the Neon twin and on DBHub, one paired verdict,
and a page that names both servers. Real parts: the local server, DBHub over stdio, the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml

from analysis import ab_page
from analysis import compare as compare_cli
from braintrust_run.adaptive import arm_settings, is_server_arm
from harness.cases import load_cases
from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.recording.store import load_run
from harness.run.trial import TrialRunner
from harness.servers.dbhub.published.pin import pinned_label
from tests.analysis.html_tree import parse
from tests.evals.cli import offline_env, python_module, run_in_repo

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="DBHub is a Node package: it needs node and npm on PATH",
)

CASES = ("complete-add-column-subtitle", "add-column-description")
TWIN = "localneon, the Neon twin (neon family)"
DBHUB = f"{pinned_label()} (dbhub family)"


def test_a_server_arm_names_its_server_and_keeps_the_model() -> None:
    base = Settings.from_env(env={"EVAL_MODEL": "control:oracle"}, dotenv_path=None, warn=False)
    assert is_server_arm("server:dbhub") and not is_server_arm("anthropic:claude-haiku-4-5")
    label, settings = arm_settings(base, "server:dbhub", "B")
    assert (label, settings.server, settings.model, settings.run_id) == (
        f"server {pinned_label()}",
        "dbhub",
        "control:oracle",
        f"{base.run_id}-B",
    )


async def test_runs_on_both_servers_compare_pair_by_pair_and_the_page_names_both(tmp_path: Path) -> None:
    cases = [case for case in load_cases() if case.id in CASES]
    results = tmp_path / "results"
    server = LocalServer(token="ab-servers-token-5d2f")
    runs: dict[str, Path] = {}
    try:
        for arm, name in (("A", "local"), ("B", "dbhub")):
            settings = Settings.from_env(
                env={"EVAL_MODEL": "control:oracle", "EVAL_SERVER": name, "EVAL_RESULTS_DIR": str(results)},
                dotenv_path=None,
                warn=False,
            ).model_copy(update={"run_id": f"servers-{arm}"})
            async with TrialRunner(settings, local_server=server) as runner:
                await asyncio.gather(*(runner.run(case, 0) for case in cases))
            runs[arm] = results / settings.run_id
    finally:
        server.stop()
    _, records_b = load_run(runs["B"])
    assert {record.config.server_family for record in records_b} == {"dbhub"}
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        assert compare_cli.main([str(runs["A"]), str(runs["B"]), "--json"]) == 0
    comparison = json.loads(captured.getvalue())
    assert (
        comparison["paired"] == len(CASES)
        and comparison["scores"]["all_scores"]["verdict"] == "no significant difference"
    )
    assert comparison["scores"]["all_scores"]["a"]["rate"] == comparison["scores"]["all_scores"]["b"]["rate"] == 1.0
    page = ab_page.write(runs["A"], runs["B"], comparison, tmp_path / "ab.html")
    root = parse(page.read_text(encoding="utf-8")).root
    assert root.one("h1").text.startswith(f"A/B: server {TWIN}") and f"vs server {DBHUB}" in root.one("h1").text
    design = " ".join(root.one("p", id="server-design").text.split())
    assert f"A on {TWIN} and B on {DBHUB}" in design
    assert [cell.text for cell in root.find_all("td", data_field="server", **{"class": "differs"})] == [TWIN, DBHUB]


@pytest.mark.long  # `make ab` itself, both servers through the real CLI
def test_make_ab_of_two_servers_runs_the_same_cases_on_both_and_gives_one_verdict(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    chosen = [case for case in load_cases() if case.id in CASES]
    dataset.write_text(yaml.safe_dump({"version": 1, "cases": [c.model_dump(mode="json") for c in chosen]}))
    results = tmp_path / "results"
    env = offline_env(results, EVAL_DATASET=str(dataset), EVAL_RUN_ID="ab-servers", EVAL_CONCURRENCY="4")
    env.pop("EVAL_TRIALS")
    command = python_module("evals.ab", "server:local", "server:dbhub", "--max", "2")
    completed = run_in_repo([*command, "--eval", "evals/eval_complete_migration.py"], env, timeout=600)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "both arms run control:oracle" in completed.stderr
    assert "all_scores: no significant difference" in completed.stdout
    _, records_a = load_run(results / "ab-servers-A")
    _, records_b = load_run(results / "ab-servers-B")
    assert {r.config.server for r in records_a} == {"local"} and {r.config.server for r in records_b} == {"dbhub"}
    assert sorted((r.case_id, r.trial_index) for r in records_a) == sorted(
        (r.case_id, r.trial_index) for r in records_b
    )
    page = parse((results / "ab-servers-ab.html").read_text(encoding="utf-8")).root
    assert TWIN in page.one("h1").text and DBHUB in page.one("h1").text
