"""A run that ended without cleaning up (its cluster stopped under it, its deletes failed) is nobody's:
the janitor removes its leftovers at once, not an hour later, and still spares a live run's."""

from __future__ import annotations

import secrets
from pathlib import Path

from harness.mcp.server_process import LocalServer
from harness.run import liveness
from harness.servers.neon.api import NeonAPI
from tests.evals.cli import offline_env, python_module, run_in_repo
from tests.faults.conftest import catalog_rows, faults_cluster
from tests.pgdirs import FAULTS_PGDATA


def project_names(prefix: str) -> list[str]:
    return catalog_rows("SELECT name FROM projects WHERE name LIKE %s", f"{prefix}%")


async def test_the_janitor_collects_an_ended_run_at_once_and_spares_a_live_one(tmp_path: Path) -> None:
    faults_cluster()  # up, and held by this process, before the servers below open it
    ended, live = f"ended-{secrets.token_hex(3)}", f"live-{secrets.token_hex(3)}"
    results = tmp_path / "results"
    for run_id in (ended, live):
        (results / run_id).mkdir(parents=True)
        (results / run_id / "run.json").write_text("{}")
    liveness.register_run(live)  # this process runs it (the entry goes when the process exits)
    server = LocalServer(env={"LOCALNEON_PGDATA": str(FAULTS_PGDATA)})
    endpoints = await server.start()
    api = NeonAPI(endpoints.api_url, None, operation_poll=0.05)
    try:
        for run_id in (ended, live):
            await api.create_project(f"eval-{run_id}-case-0")
    finally:
        await api.aclose()
        server.stop()
    assert project_names(f"eval-{ended}-") and project_names(f"eval-{live}-")

    env = offline_env(results, LOCALNEON_PGDATA=str(FAULTS_PGDATA))
    janitor = run_in_repo(python_module("harness.servers.neon.janitor"), env, timeout=300)  # --older-than 1h

    assert janitor.returncode == 0, janitor.stdout + janitor.stderr[-3000:]
    assert project_names(f"eval-{ended}-") == [], janitor.stdout
    assert project_names(f"eval-{live}-") == [f"eval-{live}-case-0"], "a live run's project was deleted"
    cleanup = run_in_repo(python_module("harness.servers.neon.janitor", "--older-than", "0s"), env, timeout=300)
    assert cleanup.returncode == 0 and project_names(f"eval-{live}-") == [], cleanup.stdout
