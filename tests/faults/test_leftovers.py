"""Nothing left behind, whatever the order of events, with real `make eval`s on a cluster of the test's
own: two started at once leave no PostgreSQL running; a PostgreSQL killed mid-run, or a run killed
outright, leaves nothing that the next `make eval` does not delete (projects, databases, roles)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from harness.mcp.server_process import LocalServer
from harness.run import liveness
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.leftovers import collect_ended_runs
from localneon.cluster.pg import get_cluster, live_postmaster, start_embedded
from tests.evals.cli import REPO_ROOT, run_in_repo
from tests.faults.conftest import SMALL_DATASET, own_cluster_dir, start_job, wait_for_records
from tests.faults.test_two_runs import ONE_CASE, assert_nothing_left, outcomes, run_env

pytestmark = [
    pytest.mark.skipif("DATABASE_URL" in os.environ, reason="the clusters are embedded ones"),
    pytest.mark.skipif(shutil.which("make") is None, reason="needs make"),
]


def trials_file(env: dict[str, str]) -> Path:
    return Path(env["EVAL_RESULTS_DIR"]) / env["EVAL_RUN_ID"] / "trials.jsonl"


def run_projects(pgdata: Path, run_id: str) -> list[str]:
    """The run's projects in the twin's catalog (the cluster runs; no lease taken to look)."""
    cluster = start_embedded(pgdata, lease=False)
    with psycopg.connect(cluster.conninfo("localneon_catalog"), autocommit=True) as catalog:
        rows = catalog.execute("SELECT name FROM projects WHERE name LIKE %s", (f"eval-{run_id}-%",))
        return sorted(str(row[0]) for row in rows)


@pytest.mark.long  # two whole `make eval`s and a first start of a cluster; test_leases.py holds the parts
def test_two_make_evals_started_at_once_leave_no_process(
    tmp_path: Path, request: pytest.FixtureRequest, reaped: list[subprocess.Popen[str]]
) -> None:
    pgdata = own_cluster_dir(request, f"at-once-{secrets.token_hex(3)}")
    envs = [run_env(tmp_path, name, pgdata, ONE_CASE, EVAL_TRIALS="2") for name in ("first", "second")]
    jobs = [start_job(["make", "-s", "eval"], env) for env in envs]
    reaped.extend(jobs)
    for job, env in zip(jobs, envs, strict=True):
        _, stderr = job.communicate(timeout=600)
        assert job.returncode == 0, stderr[-3000:]
        assert outcomes(env) == ["ok", "ok"], stderr[-3000:]
    assert_nothing_left(pgdata, *envs)


@pytest.mark.long  # two whole `make eval`s; test_leases.py and test_server_restart.py hold the parts
def test_after_a_postgresql_killed_mid_run_the_next_make_eval_leaves_nothing_of_it(
    tmp_path: Path, request: pytest.FixtureRequest, reaped: list[subprocess.Popen[str]]
) -> None:
    pgdata = own_cluster_dir(request, f"pg-killed-{secrets.token_hex(3)}")
    crashed_env = run_env(tmp_path, "crashed", pgdata, SMALL_DATASET, EVAL_TRIALS="4", EVAL_CONCURRENCY="2")
    crashed = start_job(["make", "-s", "eval"], crashed_env)
    reaped.append(crashed)
    wait_for_records(crashed, trials_file(crashed_env), 1, timeout=300)
    postmaster = live_postmaster(pgdata)
    assert postmaster is not None, "no PostgreSQL under the run"
    os.kill(postmaster.pid, signal.SIGKILL)  # as the OOM killer does: no shutdown, trials in flight
    _, crashed_err = crashed.communicate(timeout=600)
    # The twin starts its PostgreSQL again; a call in flight at the kill fails: a trial cut (exit 2, its
    # infrastructure error named) or a sandbox left (exit 1, naming who deletes it).
    assert crashed.returncode in (0, 1, 2), crashed_err[-3000:]
    if crashed.returncode == 1:
        assert "the next run on the local server deletes it at its start" in crashed_err, crashed_err[-3000:]
    assert outcomes(crashed_env)[-1] == "ok", "the trials after the kill did not run on the revived server"

    after_env = run_env(tmp_path, "after", pgdata, ONE_CASE, EVAL_TRIALS="1")
    after = run_in_repo(["make", "-s", "eval"], after_env, timeout=600)
    assert after.returncode == 0, after.stderr[-3000:]
    assert_nothing_left(pgdata, crashed_env, after_env)


@pytest.mark.long  # two whole `make eval`s; test_sigkill.py and the janitor's tests hold the parts
def test_after_a_run_killed_outright_the_next_make_eval_deletes_what_it_left(
    tmp_path: Path, request: pytest.FixtureRequest, reaped: list[subprocess.Popen[str]]
) -> None:
    pgdata = own_cluster_dir(request, f"run-killed-{secrets.token_hex(3)}")
    killed_env = run_env(tmp_path, "killed", pgdata, SMALL_DATASET, EVAL_TRIALS="20", EVAL_CONCURRENCY="2")
    killed = start_job(["make", "-s", "eval"], killed_env)
    reaped.append(killed)
    wait_for_records(killed, trials_file(killed_env), 1, timeout=300)
    deadline = time.monotonic() + 120
    while not run_projects(pgdata, killed_env["EVAL_RUN_ID"]):
        assert time.monotonic() < deadline and killed.poll() is None, "no sandbox of the run to leave behind"
        time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL)  # make, the launcher and the eval: no clean-up, no release
    killed.wait(30)
    time.sleep(2.0)  # a delete sent just before the kill may still complete on the orphaned server
    left = run_projects(pgdata, killed_env["EVAL_RUN_ID"])

    after_env = run_env(tmp_path, "after", pgdata, ONE_CASE, EVAL_TRIALS="1")
    after = run_in_repo(["make", "-s", "eval"], after_env, timeout=600)
    assert after.returncode == 0, after.stderr[-3000:]
    if left:  # what the kill left is deleted by the next run itself, which says so
        assert "project(s) that ended runs left on the local server" in after.stderr, after.stderr[-3000:]
    assert_nothing_left(pgdata, killed_env, after_env)


KILLED_RUN = "import os, signal, sys; from harness.run import liveness\n"
KILLED_RUN += "liveness.register_run(sys.argv[1]); os.kill(os.getpid(), signal.SIGKILL)"


def owned(project: dict[str, object]) -> tuple[list[str], list[str]]:
    """The PostgreSQL databases and roles behind a project the local server created."""
    with psycopg.connect(get_cluster().conninfo("localneon_catalog"), autocommit=True) as catalog:
        databases = catalog.execute(
            "SELECT d.pg_name FROM databases d JOIN branches b ON b.id = d.branch_id WHERE b.project_id = %s",
            (project["id"],),
        ).fetchall()
        roles = catalog.execute("SELECT role_name FROM projects WHERE id = %s", (project["id"],)).fetchall()
    return [str(row[0]) for row in databases], [str(row[0]) for row in roles]


def existing(databases: list[str], roles: list[str]) -> list[str]:
    with psycopg.connect(get_cluster().conninfo("postgres"), autocommit=True) as admin:
        found = admin.execute("SELECT datname FROM pg_database WHERE datname = ANY(%s)", (databases,)).fetchall()
        found += admin.execute("SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", (roles,)).fetchall()
    return [str(row[0]) for row in found]


async def test_a_run_start_deletes_what_ended_runs_left_and_spares_live_ones(tmp_path: Path) -> None:
    """What `TrialRunner` does when it has started the local server, on the run's own server and cluster:
    the projects, databases and roles of a killed run and of a recorded run that ended go; a live
    run's and the starting run's own stay."""
    token = secrets.token_hex(3)
    ended, killed, live, own = (f"{kind}-{token}" for kind in ("ended", "killed", "live", "own"))
    results = tmp_path / "results"
    for run_id in (ended, own):
        (results / run_id).mkdir(parents=True)
        (results / run_id / "run.json").write_text("{}")
    liveness.register_run(live)  # this process runs it
    child = subprocess.run([sys.executable, "-c", KILLED_RUN, killed], cwd=REPO_ROOT, check=False)
    assert child.returncode == -signal.SIGKILL and killed in {entry.run_id for entry in liveness.dead_runs()}
    server = LocalServer()
    endpoints = await server.start()
    api = NeonAPI(endpoints.api_url, None, operation_poll=0.05)
    try:
        made = {
            run_id: (await api.create_project(f"eval-{run_id}-case-0"))["project"]
            for run_id in (ended, killed, live, own)
        }
        behind = {run_id: owned(project) for run_id, project in made.items()}
        assert all(databases and roles for databases, roles in behind.values()), behind
        report = await collect_ended_runs(api, results, own)
        names = sorted(str(project["name"]) for project in await api.list_projects(search=f"-{token}-"))
    finally:
        await api.aclose()
        server.stop()
    assert report.errors == [] and sorted(report.projects) == sorted(made[run]["id"] for run in (ended, killed))
    assert names == [f"eval-{live}-case-0", f"eval-{own}-case-0"], names
    for run_id in (ended, killed):
        assert existing(*behind[run_id]) == [], f"{run_id}'s databases or roles outlived its project"
    assert existing(*behind[live]) != [], "a live run's database was dropped"
    assert killed not in {entry.run_id for entry in liveness.dead_runs()}, "the killed run's entry was kept"
    server = LocalServer()  # leave the shared cluster as found: the spared projects go
    endpoints = await server.start()
    api = NeonAPI(endpoints.api_url, None, operation_poll=0.05)
    try:
        for run_id in (live, own):
            await api.delete_project(str(made[run_id]["id"]))
    finally:
        await api.aclose()
        server.stop()


async def test_the_local_server_starts_a_killed_postgresql_again_and_its_last_user_stops_it(
    request: pytest.FixtureRequest,
) -> None:
    """The OOM killer takes the postmaster: the next call finds it up again (crash recovery, the same
    socket), the trial's clean-up works, and the server's end still stops it: nothing runs after."""
    pgdata = own_cluster_dir(request, f"revive-{secrets.token_hex(3)}")
    server = LocalServer(env={"LOCALNEON_PGDATA": str(pgdata)})
    endpoints = await server.start()
    api = NeonAPI(endpoints.api_url, None, operation_poll=0.05)
    try:
        project = (await api.create_project("eval-revive-case-0"))["project"]
        postmaster = live_postmaster(pgdata)
        assert postmaster is not None
        os.kill(postmaster.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30  # gone (a call already in flight at the kill fails: documented)
        while live_postmaster(pgdata) is not None:
            assert time.monotonic() < deadline, "the killed postmaster is still there"
            time.sleep(0.02)
        assert [item["id"] for item in await api.list_projects(search="eval-revive-")] == [project["id"]]
        revived = live_postmaster(pgdata)
        assert revived is not None and revived.pid != postmaster.pid and revived.status == "ready"
        await api.delete_project(str(project["id"]))
        assert await api.list_projects(search="eval-revive-") == []
    finally:
        await api.aclose()
        server.stop()
    assert live_postmaster(pgdata) is None, "the revived PostgreSQL outlived its only user"
