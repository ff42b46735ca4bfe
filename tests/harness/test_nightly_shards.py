"""The nightly's `evals` job, shard by shard, as the workflow writes it, on the pool `pool setup
--apply` makes by default: every shard starts and runs its share on projects of its own, and the
`report` job's merge gives one run; a pool of 2 projects per fixture (setup's old default) stops a
shard at setup naming the shard, its share and the `--per-fixture` the shard count needs.

The server is Neon's cloud stood in for on 127.0.0.1 (`tests/fakes/neon_cloud.py`, in front of the
local twin) and Braintrust is its recording stand-in; the only variables set beyond the workflow's
are the ones pointing at those stand-ins and at this test's folders (`MACHINE`).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harness.cases import load_cases
from harness.mcp.server_process import ServerEndpoints
from harness.recording.store import load_run
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.pool_setup import DEFAULT_PER_FIXTURE, POOL_PREFIX, create_project, read_scripts
from tests.evals import workflow
from tests.evals.cli import DATASET_HEAD, REPO_ROOT, offline_env, run_in_repo, subtitle_case
from tests.fakes.braintrust_server import FakeBraintrust
from tests.fakes.neon_cloud import NeonCloud, neon_cloud
from tests.harness.conftest import TOKEN

KEY = "napi_standin_" + "n1ght" * 6
ORG = "org-localneon"
# Three fixtures, sorted in the pool line blog, shop, tasks: split as one list over 4 shards, shards
# 1-2 got no shop project and 3-4 no blog or tasks. Two evals, so one experiment each.
DATASET = (
    DATASET_HEAD
    + subtitle_case(
        "blog-add-subtitle", "The subtitle column is staged on a temporary branch. Shall I apply it to main?"
    )
    + """  - id: shop-count-orders
    scenario: tool_selection
    fixture: shop
    input: "How many orders are there in my {project_id} project?"
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM orders"}}]
    forbidden_tools: [prepare_database_migration, complete_database_migration]
    expected_answer: "There are some orders."
  - id: tasks-count-teams
    scenario: tool_selection
    fixture: tasks
    input: "How many teams are there in my {project_id} project?"
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM teams"}}]
    forbidden_tools: [prepare_database_migration, complete_database_migration]
    expected_answer: "There are some teams."
"""
)
# What a test machine sets beyond the workflow: the stand-ins' addresses and its own folders.
MACHINE = ("LOCALNEON_PGDATA", "EVAL_RESULTS_DIR", "EVAL_JUDGE_PROVIDER", "EVAL_DATASET")


@pytest.fixture
async def cloud(endpoints: ServerEndpoints) -> AsyncIterator[NeonCloud]:
    """The stand-in; pool projects are deleted before and after (a killed test run leaves them)."""
    await _delete_pool_projects(endpoints)
    with neon_cloud(endpoints.api_url, endpoints.mcp_url, TOKEN, KEY, org_id=ORG) as running:
        yield running
    await _delete_pool_projects(endpoints)


async def _delete_pool_projects(endpoints: ServerEndpoints) -> None:
    async with NeonAPI(endpoints.api_url, TOKEN, operation_poll=0.05) as upstream:
        for project in await upstream.list_projects(search=POOL_PREFIX):
            await upstream.delete_project(project["id"])


def machine_env(cloud: NeonCloud, results: Path, dataset: Path) -> dict[str, str]:
    """A fresh machine's environment, pointed at the stand-ins (no EVAL_* beyond MACHINE's)."""
    env = offline_env(results, EVAL_DATASET=str(dataset), NEON_API_URL=cloud.api_url, NEON_MCP_URL=cloud.mcp_url)
    env.pop("EVAL_TRIALS")  # the workflow's own value applies
    assert {name for name in env if name.startswith("EVAL_")} <= set(MACHINE)
    return {**env, "NEON_ORG_ID": ORG}


def shard_context(shard: int, count: int, pool: str, braintrust_key: str) -> dict[str, str]:
    """The expression values GitHub gives shard `shard`'s job on the first attempt of run 4242."""
    return {
        "matrix.shard": str(shard),
        "strategy.job-total": str(count),
        "github.run_id": "4242",
        "github.run_attempt": "1",
        "secrets.ANTHROPIC_API_KEY": "",  # a fork without a model key: the model is a repository variable
        "secrets.BRAINTRUST_API_KEY": braintrust_key,
        "secrets.NEON_API_KEY": KEY,
        "vars.NEON_PROJECT_POOL": pool,
        "vars.EVAL_MODEL": "control:oracle",
    }


def run_step(script: str, checkout: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A `report` job step's script, run by bash in that job's checkout."""
    return subprocess.run(
        ["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def shard_command(job: dict[str, Any]) -> list[str]:
    """The `Evals` step's script, as the runner's shell runs it."""
    return ["bash", "-c", workflow.run_script(job, "Evals", {})]


def run_shard(job: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_in_repo(shard_command(job), env, timeout=600)


def run_shards_at_once(job: dict[str, Any], envs: list[dict[str, str]], logs: Path) -> list[int]:
    """Every shard's step at the same time, as the matrix's machines run them; exit codes in order."""
    logs.mkdir()
    started = []
    for index, env in enumerate(envs, start=1):
        with (logs / f"shard-{index}.log").open("w") as log:
            process = subprocess.Popen(
                shard_command(job), cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True
            )
        started.append(process)
    return [process.wait(timeout=600) for process in started]


@pytest.mark.long  # every shard on the default pool; test_sharding.py runs two shards, the test below one
def test_every_shard_of_the_nightly_runs_its_share_on_the_default_pool(cloud: NeonCloud, tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(DATASET, encoding="utf-8")
    setup_env = {**machine_env(cloud, tmp_path / "setup", dataset), "EVAL_SERVER": "neon", "NEON_API_KEY": KEY}
    applied = run_in_repo([sys.executable, "-m", "harness.pool", "setup", "--apply"], setup_env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "pool: creating 1/12: " in applied.stderr and "pool: creating 12/12: " in applied.stderr  # never silent
    pool = applied.stdout.strip().splitlines()[-1].removeprefix("NEON_PROJECT_POOL=")
    fixture_of = {entry.split(":")[1]: entry.split(":")[0] for entry in pool.split(",")}
    assert sorted(fixture_of.values()) == sorted(["blog", "shop", "tasks"] * DEFAULT_PER_FIXTURE)

    nightly = workflow.load("nightly.yml")
    evals, report = nightly["jobs"]["evals"], nightly["jobs"]["report"]
    count = len(evals["strategy"]["matrix"]["shard"])
    assert count == DEFAULT_PER_FIXTURE == 4  # the default pool is made for the nightly's shard count
    checkout = tmp_path / "report-checkout"  # the report job's checkout, so nothing lands in the repo
    shards = checkout / "shards"  # as download-artifact lays the shards' results out there
    with FakeBraintrust() as braintrust:
        envs = []
        for shard in range(1, count + 1):
            context = shard_context(shard, count, pool, braintrust.env()["BRAINTRUST_API_KEY"])
            env = {**machine_env(cloud, shards / f"eval-results-shard-{shard}", dataset), **braintrust.env()}
            env.update(workflow.step_env(evals, "Evals", context))
            assert env["EVAL_SHARD"] == f"{shard}/4" and env["EVAL_MODEL"] == "control:oracle"
            envs.append(env)
        codes = run_shards_at_once(evals, envs, tmp_path / "logs")
        assert codes == [0] * count, "\n".join(
            f"shard {n}/4 exited {code}:\n{(tmp_path / 'logs' / f'shard-{n}.log').read_text()[-4000:]}"
            for n, code in enumerate(codes, start=1)
            if code
        )
        names = sorted(experiment["name"] for experiment in braintrust.experiments)
        used: dict[int, set[str]] = {}
        for shard, env in enumerate(envs, start=1):
            _, records = load_run(Path(env["EVAL_RESULTS_DIR"]) / env["EVAL_RUN_ID"])
            assert records and all(r.outcome == "ok" for r in records), [r.error for r in records]
            assert all(fixture_of[str(r.project_id)] == r.case_id.split("-")[0] for r in records)
            used[shard] = {str(r.project_id) for r in records}
        run_id = env["EVAL_RUN_ID"]
        assert run_id == "nightly-4242-1"
        # One experiment per eval and model, continued by every shard.
        assert names == [
            f"prepare_migration · control:oracle · neon · default · {run_id}",
            f"tool_selection · control:oracle · neon · default · {run_id}",
        ]
        for first in used:  # no two machines ever touched one project
            for second in used:
                assert first == second or not used[first] & used[second], (first, second)
        assert cloud.sessions.overlaps == [] and cloud.sessions.unpinned == 0

        # The report job's merge step, as written.
        for name in ("Makefile", "pyproject.toml", ".venv", "evals"):  # of the checkout: what its steps run
            (checkout / name).symlink_to(REPO_ROOT / name)
        script = workflow.run_script(report, "Merge the shards", {})
        report_env = {**offline_env(tmp_path / "unused"), **workflow.step_env(report, "Merge the shards", context)}
        report_env["EVAL_DATASET"] = str(dataset)  # the test's cases stand in for the bundled ones
        merged = run_step(script, checkout, report_env)
        assert merged.returncode == 0, merged.stdout[-2000:] + merged.stderr[-3000:]
        _, records = load_run(checkout / "results" / run_id)
        expected = sorted(
            [("blog-add-subtitle", i) for i in range(5)]
            + [(c, i) for c in ("shop-count-orders", "tasks-count-teams") for i in range(5)]
        )
        assert sorted((r.case_id, r.trial_index) for r in records) == expected  # EVAL_TRIALS=5, each trial once
        assert (checkout / "results" / run_id / "report.html").is_file()
        merged_run = json.loads((checkout / "results" / run_id / "run.json").read_text())
        assert merged_run["merged_from"] and merged_run["shards"]["complete"], merged_run["shards"]
        assert "the whole run" in merged.stdout

        # The report job's last step: the night's experiments become bases for the next run.
        mark_env = {**report_env, **braintrust.env()}
        mark_env.update(workflow.step_env(report, "Mark the night's experiments", {**context}))
        marked = run_step(workflow.run_script(report, "Mark the night's experiments", {}), checkout, mark_env)
        assert marked.returncode == 0, marked.stdout + marked.stderr
        stored = [experiment["metadata"] for experiment in braintrust.experiments]
    assert [m["shards_merged"] for m in stored] == ["4 of 4 shards, 15 of 15 planned trials"] * 2


def test_a_shard_whose_share_has_no_project_stops_at_setup_naming_the_shortfall(
    cloud: NeonCloud, tmp_path: Path
) -> None:
    """Two projects per fixture (what setup made by default before): shard 3/4 would get none."""
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(DATASET, encoding="utf-8")
    pool = ",".join(f"{fixture}:{fixture}-project-{n}" for fixture in ("blog", "shop", "tasks") for n in (1, 2))
    evals = workflow.load("nightly.yml")["jobs"]["evals"]
    env = machine_env(cloud, tmp_path / "results", dataset)
    env.update(workflow.step_env(evals, "Evals", shard_context(3, 4, pool, "")))
    completed = run_shard(evals, env)
    assert completed.returncode == 2, completed.stdout[-2000:] + completed.stderr[-3000:]
    line = next(line for line in completed.stderr.splitlines() if "NEON_PROJECT_POOL is too small" in line)
    assert line.startswith("evals: stopping before any trial: EVAL_SHARD=3/4:")
    assert "shard 3/4 (its share: " in line and "gets no project of blog, shop, tasks" in line
    assert "`python -m harness.pool setup --per-fixture 4 --apply`" in line
    assert "create them with `python -m harness.pool setup --apply`" not in completed.stderr  # the old, wrong advice
    assert not cloud.calls("POST", "/branches")  # nothing started


# Five counts on two small fixtures, one eval: with EVAL_TRIALS=1 and 4 shards, shard 1/4 runs notes-1
# and tags-1, shards 2-4 one notes case each. Shard 4/4's share has no `tags` trial, so it gets no
# tags project, and its start must not ask for one (it did: "NEON_PROJECT_POOL has no project holding
# the fixture(s) tags that cases use", on the default pool).
NOTES_SQL = "CREATE TABLE notes (id serial PRIMARY KEY, body text);\nINSERT INTO notes (body) VALUES ('a'), ('b');\n"
TAGS_SQL = "CREATE TABLE tags (id serial PRIMARY KEY, name text);\nINSERT INTO tags (name) VALUES ('x'), ('y');\n"


def count_case(case_id: str, table: str, answer: str) -> str:
    return (
        f"  - id: {case_id}\n"
        "    scenario: tool_selection\n"
        f"    fixture: {table}\n"
        f'    input: "How many {table} are there in my {{project_id}} project?"\n'
        f'    reference_calls: [{{tool: run_sql, arguments: {{sql: "SELECT count(*) FROM {table}"}}}}]\n'
        "    forbidden_tools: [prepare_database_migration, complete_database_migration]\n"
        f'    expected_answer: "{answer}"\n'
    )


SMALL_TWO_FIXTURES = DATASET_HEAD + "".join(
    [
        *(count_case(f"notes-{n}", "notes", "There are 2 notes.") for n in range(1, 5)),
        count_case("tags-1", "tags", "2."),
    ]
)


async def _create_pool_project(endpoints: ServerEndpoints, name: str, sql_file: Path) -> str:
    """A pool project as `pool setup --apply` makes it (fixture on golden, main from it), on the upstream."""
    async with NeonAPI(endpoints.api_url, TOKEN, operation_poll=0.05) as upstream:
        return await create_project(upstream, POOL_PREFIX + name, read_scripts(sql_file), "golden")


def test_shard_4_of_4_with_one_trial_runs_on_the_default_pool_without_a_project_its_share_does_not_use(
    cloud: NeonCloud, endpoints: ServerEndpoints, tmp_path: Path
) -> None:
    """The default pool's shape (4 projects per fixture, sorted by fixture): notes' projects go one to each
    shard, all of tags' to shard 1/4, the only one whose share uses it. Shard 4/4 owns the 4th notes entry,
    the only real project here; the others are ids no request may name."""
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "notes.sql").write_text(NOTES_SQL, encoding="utf-8")
    (tmp_path / "fixtures" / "tags.sql").write_text(TAGS_SQL, encoding="utf-8")
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(SMALL_TWO_FIXTURES, encoding="utf-8")
    real = asyncio.run(_create_pool_project(endpoints, "notes-shard-4", tmp_path / "fixtures" / "notes.sql"))
    others = [f"notes:absent-notes-{n}" for n in (1, 2, 3)]
    pool = ",".join([*others, f"notes:{real}", *(f"tags:absent-tags-{n}" for n in range(1, 5))])
    env = offline_env(
        tmp_path / "results",
        EVAL_DATASET=str(dataset),
        EVAL_SERVER="neon",
        NEON_API_URL=cloud.api_url,
        NEON_MCP_URL=cloud.mcp_url,
        NEON_API_KEY=KEY,
        NEON_ORG_ID=ORG,
        NEON_PROJECT_POOL=pool,
        EVAL_SHARD="4/4",
        EVAL_TRIALS="1",
        EVAL_RUN_ID="shard-four",
        EVAL_MODEL="control:oracle",
    )
    completed = run_in_repo([sys.executable, "-m", "evals"], env, timeout=600)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-3000:]
    assert "no project holding" not in completed.stderr and "too small" not in completed.stderr
    _, records = load_run(tmp_path / "results" / "shard-four")
    assert [(r.case_id, r.trial_index, r.outcome, str(r.project_id)) for r in records] == [("notes-4", 0, "ok", real)]
    absent = [entry.partition(":")[2] for entry in pool.split(",") if entry.partition(":")[2] != real]
    assert not [r.path for r in cloud.requests if any(project in r.path for project in absent)]
    assert set(cloud.sessions.opened) <= {real}


@pytest.mark.long  # the pool setup makes by default for the bundled cases (28 projects), and every shard's share
def test_every_shard_of_the_bundled_cases_with_one_trial_runs_on_the_default_pool(
    cloud: NeonCloud, tmp_path: Path
) -> None:
    """`EVAL_SHARD=k/4 EVAL_TRIALS=1 python -m evals` for k = 1..4 at once, on what `pool setup --apply`
    makes: each shard starts (4/4 stopped, its share using no `tasks`), runs only on projects of its own,
    and the merged run holds every planned trial once."""
    base_env = offline_env(
        tmp_path / "setup", EVAL_SERVER="neon", NEON_API_URL=cloud.api_url, NEON_MCP_URL=cloud.mcp_url
    )
    base_env.pop("EVAL_DATASET", None)  # the bundled cases
    base_env.update({"NEON_API_KEY": KEY, "NEON_ORG_ID": ORG})
    applied = run_in_repo([sys.executable, "-m", "harness.pool", "setup", "--apply"], base_env, timeout=1800)
    assert applied.returncode == 0, applied.stdout[-2000:] + applied.stderr[-2000:]
    pool = applied.stdout.strip().splitlines()[-1].removeprefix("NEON_PROJECT_POOL=")
    fixture_of = {entry.split(":")[1]: entry.split(":")[0] for entry in pool.split(",")}
    cases = load_cases()
    assert Counter(fixture_of.values()) == {case.fixture: DEFAULT_PER_FIXTURE for case in cases}

    envs = []
    for shard in range(1, 5):
        env = {**base_env, "EVAL_RESULTS_DIR": str(tmp_path / f"machine-{shard}")}
        env.update(
            NEON_PROJECT_POOL=pool,
            EVAL_SHARD=f"{shard}/4",
            EVAL_TRIALS="1",
            EVAL_RUN_ID="bundled-1",
            EVAL_MODEL="control:oracle",
        )
        envs.append(env)
    logs = tmp_path / "logs"
    logs.mkdir()
    started = []
    for shard, env in enumerate(envs, start=1):
        with (logs / f"shard-{shard}.log").open("w") as log:
            command = [sys.executable, "-m", "evals"]
            started.append(subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
    codes = [process.wait(timeout=3600) for process in started]
    assert codes == [0] * 4, "\n".join(
        f"shard {n}/4 exited {code}:\n{(logs / f'shard-{n}.log').read_text()[-4000:]}"
        for n, code in enumerate(codes, start=1)
        if code
    )
    used: dict[int, set[str]] = {}
    for shard, env in enumerate(envs, start=1):
        _, records = load_run(Path(env["EVAL_RESULTS_DIR"]) / "bundled-1")
        assert records and all(r.outcome == "ok" for r in records), [r.error for r in records if r.outcome != "ok"]
        fixture = {case.id: case.fixture for case in cases}
        assert all(fixture_of[str(r.project_id)] == fixture[r.case_id] for r in records)
        used[shard] = {str(r.project_id) for r in records}
    for first in used:  # no two machines ever touched one project
        for second in used:
            assert first == second or not used[first] & used[second], (first, second)
    assert cloud.sessions.overlaps == [] and cloud.sessions.unpinned == 0

    merged_dir = tmp_path / "merged"
    shard_runs = [str(Path(env["EVAL_RESULTS_DIR"]) / "bundled-1") for env in envs]
    merged = run_in_repo([sys.executable, "-m", "analysis.merge", str(merged_dir), *shard_runs], base_env)
    assert merged.returncode == 0 and "the whole run" in merged.stdout, merged.stdout + merged.stderr
    _, records = load_run(merged_dir)
    planned = sorted((case.id, index) for case in cases for index in range(case.trial_count or 1))
    assert sorted((r.case_id, r.trial_index) for r in records) == planned  # every planned trial once
