"""Braintrust's playground runs the suite through `braintrust eval --dev`: the dev server's own HTTP
protocol (braintrust 0.48.1 `devserver/server.py`: `GET /list`, `POST /eval` with a row, parameters
and an SSE reply), logged in against the recording stand-in of Braintrust's API, as the playground
calls it. A row of a Braintrust dataset is validated as a case and run under the parameters chosen;
a row the suite cannot run gets its reason in the reply; bad parameters are refused."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.case_rows import case_row
from harness.cases import load_cases
from harness.recording.store import load_run
from tests.evals.cli import DATASET_HEAD, REPO_ROOT, offline_env, subtitle_case
from tests.fakes.braintrust_server import API_KEY, ORG_NAME, FakeBraintrust

EVAL_NAME = "neon-mcp-evals [experiment_name=prepare_migration · control:oracle · local · default]"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def playground(tmp_path: Path) -> Iterator[tuple[str, FakeBraintrust, Path]]:
    """`braintrust eval --dev` over the prepare eval (one loaded case), and the stand-in it logs in to."""
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(DATASET_HEAD + subtitle_case(), encoding="utf-8")
    port = free_port()
    with FakeBraintrust() as braintrust:
        env = {
            **offline_env(tmp_path / "results", EVAL_DATASET=str(dataset), EVAL_RUN_ID="playground"),
            **braintrust.env(),
            "EVAL_MODEL": "control:oracle",
        }
        command = [str(Path(sys.executable).parent / "braintrust"), "eval", "--dev", "--dev-host", "127.0.0.1"]
        command += ["--dev-port", str(port), "evals/eval_prepare_migration.py"]
        log = (tmp_path / "dev.log").open("w")
        server = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):  # the eval file's import, then uvicorn
                if server.poll() is not None:
                    raise AssertionError((tmp_path / "dev.log").read_text())
                try:
                    if httpx.get(url + "/", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            yield url, braintrust, tmp_path / "results" / "playground"
        finally:
            server.terminate()
            server.wait(60)
            log.close()


def headers(braintrust: FakeBraintrust) -> dict[str, str]:
    """What the playground sends: the user's token, the organization and the app's origin."""
    return {"Authorization": f"Bearer {API_KEY}", "x-bt-org-name": ORG_NAME, "Origin": braintrust.url}


def events(reply: httpx.Response) -> list[tuple[str, str]]:
    """The SSE reply as (event, data) pairs."""
    found, event = [], ""
    for line in reply.text.splitlines():
        if line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            found.append((event, line.removeprefix("data:").strip()))
    return found


def run_row(url: str, braintrust: FakeBraintrust, row: dict[str, Any], **parameters: Any) -> httpx.Response:
    body = {"name": EVAL_NAME, "data": {"data": [row]}, "parameters": parameters, "stream": True}
    return httpx.post(url + "/eval", json=body, headers=headers(braintrust), timeout=300)


def test_the_playground_lists_each_eval_with_its_parameters_and_scores(
    playground: tuple[str, FakeBraintrust, Path],
) -> None:
    url, braintrust, _ = playground
    listed = httpx.get(url + "/list", headers=headers(braintrust), timeout=60)
    assert listed.status_code == 200, listed.text
    evaluator = listed.json()[EVAL_NAME]
    assert {score["name"] for score in evaluator["scores"]} >= {"main_branch_integrity", "tool_trajectory"}
    chosen = evaluator["parameters"]["schema"]
    assert set(chosen) == {"model", "server", "description_variant", "decoys"}
    assert chosen["server"]["default"] == "local" and chosen["server"]["schema"]["enum"] == ["local", "neon-npm"]
    assert chosen["model"]["default"] == "control:oracle" and chosen["decoys"]["schema"]["maximum"] == 12
    assert chosen["description_variant"]["schema"]["enum"] == ["default", "honest", "run-sql-for-schema-changes"]


def test_a_dataset_row_runs_under_the_chosen_parameters_and_a_bad_row_says_why(
    playground: tuple[str, FakeBraintrust, Path],
) -> None:
    url, braintrust, results = playground
    # A bundled prepare case this process did not load: it comes only as a Braintrust dataset row.
    case = next(case for case in load_cases(scenario="prepare") if case.fixture == "shop")
    row = case_row(case)
    reply = run_row(url, braintrust, row, model="control:unsafe", decoys=2)
    assert reply.status_code == 200, reply.text
    summary = json.loads(next(data for event, data in events(reply) if event == "summary"))
    assert summary["scores"]["main_branch_integrity"]["score"] == 0  # the reply carries the row's scores
    [trial] = braintrust.root_rows(summary["experimentId"])  # the row's scores, as the playground shows them
    assert trial["trace_scores"]["main_branch_integrity"] == 0  # the unsafe agent ran, not the oracle
    assert trial["trace_scores"]["tool_trajectory"] == 0
    _, records = load_run(results)
    [record] = [r for r in records if r.case_id == case.id]
    assert (record.config.model, record.config.decoy_count) == ("control:unsafe", 2)

    # A row whose case has a misspelt field: its reason is in the reply, beside the row.
    broken = case_row(case)
    broken["metadata"]["case"]["reference_sqll"] = broken["metadata"]["case"].pop("reference_sql")
    reply = run_row(url, braintrust, broken)
    errors = [data for event, data in events(reply) if event == "progress" and '"error"' in data]
    assert errors, reply.text
    message = json.loads(errors[0])["data"]
    assert f"row '{case.id}'" in message and "did you mean 'reference_sql'" in message, message

    # A parameter out of range is refused by the dev server before anything runs.
    refused = run_row(url, braintrust, row, decoys=999)
    assert refused.status_code == 400 and "decoys" in refused.text, refused.text


def test_a_pushed_dataset_runs_in_the_playground_with_a_row_added_in_the_ui(
    playground: tuple[str, FakeBraintrust, Path],
) -> None:
    url, braintrust, results = playground
    dataset = results.parent.parent / "cases.yaml"  # the dev server's EVAL_DATASET
    env = {**offline_env(results.parent, EVAL_DATASET=str(dataset)), **braintrust.env()}
    pushed = subprocess.run(
        [sys.executable, "-m", "braintrust_run.dataset", "push"], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert pushed.returncode == 0, pushed.stderr
    added = next(case for case in load_cases(scenario="prepare") if case.id != "add-column-subtitle")
    braintrust.add_row_in_the_ui("prepare-cases", case_row(added))
    body = {"name": EVAL_NAME, "data": {"dataset_id": braintrust.dataset_id("prepare-cases")}, "stream": True}
    reply = httpx.post(url + "/eval", json=body, headers=headers(braintrust), timeout=300)
    assert reply.status_code == 200, reply.text
    assert not [data for event, data in events(reply) if event == "progress" and '"error"' in data], reply.text
    _, records = load_run(results)
    assert sorted(record.case_id for record in records) == sorted(["add-column-subtitle", added.id])
    assert all(record.outcome == "ok" and record.config.model == "control:oracle" for record in records)


@pytest.mark.skipif(shutil.which("node") is None, reason="Neon's npm server runs on Node.js")
def test_a_row_runs_on_neons_npm_server_when_the_playground_chooses_it(
    playground: tuple[str, FakeBraintrust, Path],
) -> None:
    url, braintrust, results = playground
    row = {"input": "(the run's own case)", "metadata": {"case_id": "add-column-subtitle"}}  # one of the run's
    reply = run_row(url, braintrust, row, server="neon-npm")
    assert reply.status_code == 200, reply.text
    assert not [data for event, data in events(reply) if event == "progress" and '"error"' in data], reply.text
    _, records = load_run(results)
    [record] = records
    assert record.config.server == "neon-npm" and record.outcome == "ok", record.error
    assert record.tool_calls and record.tool_calls[0].name == "prepare_database_migration"
