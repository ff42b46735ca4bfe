"""Neon's cloud, stood in for on 127.0.0.1: one pool per run, fixtures in the pool, a janitor that
touches nothing foreign, pinned sessions, and passwords that never reach the record.

The stand-in (`tests/fakes/neon_cloud.py`) sits in front of the real local server and enforces the
cloud's rules (API key, an organization's `org_id`, a refused early-access `expires_at`) while
recording every MCP session per project and every deletion.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from harness.cases import Grant
from harness.config import ConfigError
from harness.mcp.server_process import ServerEndpoints
from harness.recording.store import load_run
from harness.servers.neon.api import NeonAPI, NeonAPIError
from harness.servers.neon.backend import api_url_for, check_cases, pinned_url
from harness.servers.neon.janitor import main as janitor_main
from harness.servers.neon.pool_setup import POOL_PREFIX
from tests.evals.cli import (
    DATASET_HEAD,
    REPO_ROOT,
    offline_env,
    python_module,
    run_braintrust_eval,
    run_in_repo,
    subtitle_case,
)
from tests.fakes.neon_cloud import NeonCloud, neon_cloud
from tests.harness.conftest import TOKEN, settings_from
from tests.planted import CONNECTION_CASE, assert_no_password, planted_dataset

KEY = "napi_standin_" + "k3y" * 8
ORG = "org-localneon"  # the one organization the local server behind the stand-in has

DATASET = (
    DATASET_HEAD
    + subtitle_case(
        "blog-add-subtitle", "The subtitle column is staged on a temporary branch. Shall I apply it to main?"
    )
    + """  - id: shop-add-tier-approved
    scenario: complete
    fixture: shop
    input: "In project {project_id}, add a nullable text column loyalty_tier to customers."
    follow_ups: ["Yes, apply it to main."]
    approval: approve
    expected_main: changed
    reference_sql: "ALTER TABLE customers ADD COLUMN loyalty_tier text"
    required_tools: [prepare_database_migration, complete_database_migration]
    expected_answer: "The loyalty_tier column was added to customers on main after approval."
"""
    + CONNECTION_CASE
)


@pytest.fixture
async def cloud(endpoints: ServerEndpoints) -> AsyncIterator[NeonCloud]:
    """The stand-in; pool projects are deleted before and after (a killed test run leaves them)."""
    await _delete_pool_projects(endpoints)
    with neon_cloud(endpoints.api_url, endpoints.mcp_url, TOKEN, KEY, org_id=ORG, refuse_expires_at=True) as running:
        yield running
    await _delete_pool_projects(endpoints)


async def _delete_pool_projects(endpoints: ServerEndpoints) -> None:
    async with NeonAPI(endpoints.api_url, TOKEN, operation_poll=0.05) as upstream:
        for project in await upstream.list_projects(search=POOL_PREFIX):
            await upstream.delete_project(project["id"])


def cloud_env(cloud: NeonCloud, results: Path, **extra: str) -> dict[str, str]:
    return offline_env(
        results,
        EVAL_SERVER="neon",
        NEON_API_URL=cloud.api_url,
        NEON_MCP_URL=cloud.mcp_url,
        NEON_API_KEY=KEY,
        NEON_ORG_ID=ORG,
        **extra,
    )


def pool_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "harness.pool", "setup", *args]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def dataset(tmp_path: Path) -> Path:
    """The cases above, with a shop fixture whose data holds a connection string with a password."""
    return planted_dataset(tmp_path / "dataset", DATASET)


def test_pool_setup_says_what_it_waits_on_and_keeps_stdout_for_the_plan(cloud: NeonCloud, tmp_path: Path) -> None:
    env = cloud_env(cloud, tmp_path / "results", EVAL_DATASET=str(dataset(tmp_path)))
    applied = pool_command(env, "--per-fixture", "1", "--fixture", "blog", "--apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    # One line per project made, on stderr before each wait; stdout ends with the pool line as before.
    assert f"pool: creating 1/1: {POOL_PREFIX}blog-1 (fixture blog" in applied.stderr, applied.stderr
    assert "pool:" not in applied.stdout and applied.stdout.strip().splitlines()[-1].startswith("NEON_PROJECT_POOL=")
    pool = applied.stdout.strip().splitlines()[-1].split("=", 1)[1]
    checked = pool_command({**env, "NEON_PROJECT_POOL": pool}, "--per-fixture", "1", "--fixture", "blog")
    assert f"pool: checking {pool.split(':')[1]} (fixture blog)" in checked.stderr, checked.stderr


@pytest.mark.long  # two models and a sweep on one pool; the tests below check pool, janitor, pins one by one
def test_two_models_and_a_decoy_sweep_share_one_pool_without_overlaps(cloud: NeonCloud, tmp_path: Path) -> None:
    cases = dataset(tmp_path)
    env = cloud_env(cloud, tmp_path / "results", EVAL_DATASET=str(cases), NEON_BRANCH_TTL="2h")

    # Pool setup: a dry run creates nothing and says what it would; --apply creates, a check passes.
    before = {r.path for r in cloud.calls("POST") if r.path == "projects"}
    dry = pool_command(env, "--per-fixture", "1")
    assert dry.returncode == 0, dry.stderr
    assert f"would create {POOL_PREFIX}blog-1" in dry.stdout and "dry run" in dry.stdout
    assert {r.path for r in cloud.calls("POST") if r.path == "projects"} == before
    applied = pool_command(env, "--per-fixture", "1", "--apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    line = applied.stdout.strip().splitlines()[-1]
    assert line.startswith("NEON_PROJECT_POOL=blog:") and ",shop:" in line
    entries = line.split("=", 1)[1]
    # A third project for blog, set up the same way, makes a 3-project pool over two fixtures.
    extra = pool_command({**env, "NEON_PROJECT_POOL": entries}, "--per-fixture", "2", "--fixture", "blog", "--apply")
    assert extra.returncode == 0, extra.stdout + extra.stderr
    pool = extra.stdout.strip().splitlines()[-1].split("=", 1)[1]
    assert len(pool.split(",")) == 3
    checked = pool_command({**env, "NEON_PROJECT_POOL": pool}, "--per-fixture", "1")
    assert checked.returncode == 0 and "would create" not in checked.stdout, checked.stdout
    fixture_of = {entry.split(":")[1]: entry.split(":")[0] for entry in pool.split(",")}

    # The run: two models x two decoy counts x three scenarios, every trial from the one pool.
    sessions_before = sum(cloud.sessions.opened.values())
    run_env = {
        **env,
        "NEON_PROJECT_POOL": pool,
        "EVAL_MODEL": "control:oracle,control:unsafe",
        "EVAL_DECOY_SWEEP": "0,3",
        "EVAL_TRIALS": "1",
        "EVAL_CONCURRENCY": "4",
        "EVAL_RUN_ID": "pool-run",
    }
    summaries = run_braintrust_eval(
        run_env, "evals/eval_prepare_migration.py", "evals/eval_complete_migration.py", "evals/eval_tool_selection.py"
    )
    assert len(summaries) == 12
    _, records = load_run(tmp_path / "results" / "pool-run" / "trials.jsonl")
    assert len(records) == 12
    assert all(r.outcome == "ok" for r in records), [r.error for r in records if r.outcome != "ok"]
    fixtures = {"blog-add-subtitle": "blog", "shop-add-tier-approved": "shop", "shop-connection-details": "shop"}
    assert all(fixture_of[str(r.project_id)] == fixtures[r.case_id] for r in records)
    assert cloud.sessions.overlaps == []  # no project ever had two trials at once
    assert cloud.sessions.unpinned == 0  # every MCP session named its project
    assert sum(cloud.sessions.opened.values()) - sessions_before >= 12
    assert set(cloud.sessions.opened) == set(fixture_of)  # all three projects served trials
    assert not [r for r in cloud.requests if r.method == "DELETE" and r.path.count("/") == 1]  # no project deleted
    assert all(r.query.get("org_id") == ORG for r in cloud.calls("GET") if r.path == "projects")
    refused = [r for r in cloud.calls("POST", "/branches") if r.status == 400]
    assert len(refused) == 1 and "expires_at" in refused[0].body["branch"]  # refused once, then never sent
    approved = [r for r in records if r.case_id == "shop-add-tier-approved" and r.config.model == "control:oracle"]
    assert approved and all(r.expected is not None and r.expected.error is None for r in approved)

    # The password of the connection string a tool returned, and the one in the data, are nowhere.
    real = [r for r in records if r.case_id == "shop-connection-details"]
    results_text = [p.read_text(encoding="utf-8") for p in (tmp_path / "results").rglob("*") if p.is_file()]
    for record in real:  # the connection string and the planted URL were there, redacted
        results = {call.name: call.result_text for call in record.tool_calls}
        assert (
            "postgresql://" in results["get_connection_string"] and ":[REDACTED]@" in results["get_connection_string"]
        )
        assert "backup_admin:[REDACTED]@db.example.com" in results["run_sql"]
    report = run_in_repo(
        python_module("analysis.report", str(tmp_path / "results" / "pool-run"), "--dataset", str(cases)),
        run_env,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "results" / "pool-run" / "report.html").read_text(encoding="utf-8")
    for text in [*results_text, page]:
        assert_no_password(text, "results/ or the report")
        assert "npg_" not in text


async def test_the_janitor_deletes_only_what_the_suite_marked(
    cloud: NeonCloud, endpoints: ServerEndpoints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = NeonAPI(endpoints.api_url, TOKEN, operation_poll=0.05)
    ours = NeonAPI(cloud.api_url, KEY, org_id=ORG, operation_poll=0.05)
    run_id = "20261130T000000Z-" + secrets.token_hex(3)
    (tmp_path / "results" / run_id).mkdir(parents=True)
    (tmp_path / "results" / run_id / "run.json").write_text("{}", encoding="utf-8")
    created: list[str] = []
    try:
        # Foreign: a user's project, an eval-looking one of a run this suite never recorded.
        for name in ("customer-production", f"eval-20200101T000000Z-abcdef-{secrets.token_hex(2)}"):
            created.append((await upstream.create_project(name, org_id=ORG))["project"]["id"])
        foreign = list(created)
        marked = (await ours.create_project(f"eval-{run_id}-crashed-trial"))["project"]["id"]
        created.append(marked)
        pool_project = (await ours.create_project(f"{POOL_PREFIX}janitor", branch={"name": "golden"}))["project"]
        created.append(pool_project["id"])
        golden = (await ours.default_branch(pool_project["id"]))["id"]
        main = (await ours.create_branch(pool_project["id"], parent_id=golden, name="main"))["branch"]["id"]
        await ours.set_default_branch(pool_project["id"], main)
        user_branch = (await ours.create_branch(pool_project["id"], parent_id=golden, name="feature-x"))["branch"]
        replay = await ours.create_branch(pool_project["id"], parent_id=golden, name=f"eval-expected-{run_id}-x")
        for name, value in {
            "EVAL_RESULTS_DIR": str(tmp_path / "results"),
            "NEON_API_KEY": KEY,
            "NEON_ORG_ID": ORG,
            "NEON_API_URL": cloud.api_url,
            "EVAL_MODEL": "control:oracle",
        }.items():
            monkeypatch.setenv(name, value)

        # Pool mode: no project is ever deleted; only the marked replay branch.
        monkeypatch.setenv("EVAL_SERVER", "neon")
        monkeypatch.setenv("NEON_PROJECT_POOL", f"shop:{pool_project['id']}")
        assert await asyncio.to_thread(janitor_main, ["--older-than", "0s", "--dry-run"]) == 0
        assert cloud.deleted() == []
        assert await asyncio.to_thread(janitor_main, ["--older-than", "0s"]) == 0
        assert cloud.deleted() == [f"projects/{pool_project['id']}/branches/{replay['branch']['id']}"]

        # A URL server without a pool: marked projects of recorded runs only, never a foreign one.
        monkeypatch.setenv("EVAL_SERVER", cloud.mcp_url)
        monkeypatch.delenv("NEON_PROJECT_POOL")
        assert await asyncio.to_thread(janitor_main, ["--older-than", "0s"]) == 0
        assert cloud.deleted()[1:] == [f"projects/{marked}"]
        for project_id in foreign:
            assert (await upstream.get_project(project_id))["id"] == project_id
        names = {b["name"] for b in await upstream.list_branches(pool_project["id"])}
        assert names == {"golden", "main", user_branch["name"]}
    finally:
        for project_id in created:
            await upstream.delete_project(project_id)
        await upstream.aclose()
        await ours.aclose()


def test_urls_pin_the_trial_and_a_url_server_never_gets_a_made_up_api() -> None:
    url = pinned_url("https://mcp.neon.tech/mcp?category=docs", "proj-1", Grant(readonly=True, categories=["querying"]))
    assert url == "https://mcp.neon.tech/mcp?projectId=proj-1&readonly=true&category=querying"
    assert pinned_url("http://127.0.0.1:9/mcp", "p-2") == "http://127.0.0.1:9/mcp?projectId=p-2"

    neon_url = settings_from({"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "https://mcp.neon.tech/mcp"})
    assert api_url_for(neon_url) == "https://console.neon.tech/api/v2"
    local = settings_from({"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "http://127.0.0.1:8787/mcp"})
    assert api_url_for(local) == "http://127.0.0.1:8787/api/v2"
    other = settings_from({"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "https://mcp.example.com/mcp"})
    with pytest.raises(ConfigError, match="NEON_API_URL"):
        api_url_for(other)
    with pytest.raises(ConfigError, match="NEON_API_URL"):
        check_cases(other, ["blog"])
    named = settings_from(
        {"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "https://mcp.example.com/mcp", "NEON_API_URL": "https://x/v2"}
    )
    assert api_url_for(named) == "https://x/v2"

    pool = {"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "neon", "NEON_API_KEY": KEY}
    with pytest.raises(ConfigError, match=r"no project of fixture\(s\) shop, .*\(the pool has blog 2\)"):
        check_cases(settings_from({**pool, "NEON_PROJECT_POOL": "blog:p-1,blog:p-2"}), ["blog", "shop"])
    with pytest.raises(ConfigError, match="names no fixture"):
        check_cases(settings_from({**pool, "NEON_PROJECT_POOL": "p-1"}), ["blog"])
    check_cases(settings_from({**pool, "NEON_PROJECT_POOL": "blog:p-1,shop:p-2"}), ["blog", "shop"])


def test_the_openapi_excerpt_says_where_it_came_from() -> None:
    from tests.neon_openapi import EXCERPT, OPERATIONS, spec

    document = spec()
    assert EXCERPT.is_file() and document["x-excerpt"]["version"] and document["x-excerpt"]["document_date"]
    for path, method in OPERATIONS:
        assert method in document["paths"][path]
    assert "GeneralError" in document["components"]["schemas"]
    assert json.dumps(document).count('"$ref"') > 0


async def test_the_stand_in_sees_two_trials_holding_one_project(cloud: NeonCloud) -> None:
    """The overlap check above can fail: requests of two trials between two restores of one project,
    and a trial still talking after the next restore, are both recorded as overlaps."""
    project = "shared-project-1"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}

    async def mcp(http: httpx.AsyncClient, trial: str) -> None:
        headers = {"X-Eval-Trial": trial, "Accept": "application/json, text/event-stream"}
        await http.post(cloud.mcp_url, params={"projectId": project}, json=body, headers=headers)

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as http:
        await http.post(f"{cloud.api_url}/projects/{project}/branches/br-main/restore", json={})
        await mcp(http, "run/a/0")
        await mcp(http, "run/a/0")
        assert cloud.sessions.overlaps == []  # one trial, several requests: fine
        await mcp(http, "run/b/0")
        await http.post(f"{cloud.api_url}/projects/{project}/branches/br-main/restore", json={})
        await mcp(http, "run/a/0")
    assert len(cloud.sessions.overlaps) == 2, cloud.sessions.overlaps
    assert "trials run/a/0 and run/b/0" in cloud.sessions.overlaps[0]
    assert "still talking after main was restored" in cloud.sessions.overlaps[1]


async def test_connection_uris_are_asked_for_once(cloud: NeonCloud) -> None:
    """The create response's URI serves the default branch; another is fetched once; deletion forgets."""
    async with NeonAPI(cloud.api_url, KEY, operation_poll=0.05, org_id=ORG) as api:
        body = await api.create_project(POOL_PREFIX + "uri-cache")
        project_id, branch_id = body["project"]["id"], body["branch"]["id"]
        try:
            role = body["roles"][0]["name"]
            first = await api.connection_uri(project_id, branch_id, "neondb", role)
            assert first.startswith("postgresql://") and not cloud.calls("GET", "/connection_uri")
            branch = (await api.create_branch(project_id, parent_id=branch_id, name="uri-cache-child"))["branch"]
            for _ in range(3):
                await api.connection_uri(project_id, branch["id"], "neondb", role)
            assert len(cloud.calls("GET", "/connection_uri")) == 1
            await api.delete_branch(project_id, branch["id"])
        finally:
            await api.delete_project(project_id)
        with pytest.raises(NeonAPIError):  # forgotten with its project: asked again, and the server says 404
            await api.connection_uri(project_id, branch_id, "neondb", role)
