"""A plain `pytest` run (not only `make test`) stops the embedded PostgreSQL clusters it started,
unless LOCALNEON_KEEP=1 asks to keep them for the next run or another process still uses them."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest

from localneon.cluster.pg import release
from tests.evals.cli import REPO_ROOT, python_module, run_in_repo
from tests.faults.conftest import own_cluster_dir

ONE_TEST = "tests/datasets/test_fixtures_real_pg.py::test_a_failing_reference_sql_is_caught"


def run_pytest_as(worker: str, test: str, **env: str) -> None:
    """A nested `pytest` of one test, as worker `worker` (so on clusters of its own in `.localneon/`,
    whatever LOCALNEON_TEST_ROOT the outer run has), which must pass."""
    full_env = {**os.environ, "PYTEST_XDIST_WORKER": worker, "LOCALNEON_TEST_ROOT": ".localneon", **env}
    completed = run_in_repo(python_module("pytest", "-q", "-p", "no:cacheprovider", test), full_env, timeout=300)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]


@pytest.mark.skipif("DATABASE_URL" in os.environ, reason="the clusters are embedded ones")
@pytest.mark.parametrize(
    "keep", [False, pytest.param(True, marks=pytest.mark.long)], ids=["default", "LOCALNEON_KEEP=1"]
)
def test_a_pytest_run_stops_the_clusters_it_started(keep: bool, request: pytest.FixtureRequest) -> None:
    worker = "hook" + secrets.token_hex(3)  # clusters of their own: .localneon/<name>-<worker>
    pgdata = own_cluster_dir(request, f"scorer-test-pgdata-{worker}")
    run_pytest_as(worker, ONE_TEST, LOCALNEON_KEEP="1" if keep else "0")
    assert (pgdata / "PG_VERSION").exists(), "the test ran on the worker's own cluster"
    assert (pgdata / "postmaster.pid").exists() == keep, "running after the run" if not keep else "stopped"


@pytest.mark.skipif("DATABASE_URL" in os.environ, reason="the clusters are embedded ones")
def test_a_worker_uses_its_own_cluster_whatever_data_directory_it_inherited(request: pytest.FixtureRequest) -> None:
    """An xdist controller hands its LOCALNEON_PGDATA to every worker (as a developer's shell might):
    each worker must still use, and stop, its own."""
    worker = "hook" + secrets.token_hex(3)
    own = own_cluster_dir(request, f"test-pgdata-{worker}")
    inherited = own_cluster_dir(request, f"inherited-{worker}")
    one_test = "tests/localneon/test_catalog_pool.py::test_reads_reuse_a_few_connections_even_from_many_threads"
    run_pytest_as(worker, one_test, LOCALNEON_PGDATA=str(inherited), LOCALNEON_KEEP="0")
    assert not inherited.exists(), "the tests used the data directory they inherited"
    assert (own / "PG_VERSION").exists() and not (own / "postmaster.pid").exists()


@pytest.mark.skipif("DATABASE_URL" in os.environ, reason="the clusters are embedded ones")
def test_a_pytest_run_leaves_running_a_cluster_another_process_still_uses(request: pytest.FixtureRequest) -> None:
    """Two runs in one checkout: the one that finishes first must not stop the cluster under the other."""
    worker = "hook" + secrets.token_hex(3)
    pgdata = own_cluster_dir(request, f"scorer-test-pgdata-{worker}")
    holding = "import sys, time; from pathlib import Path; from localneon.cluster.pg import start_embedded; "
    holding += "start_embedded(Path(sys.argv[1])); print('holding', flush=True); time.sleep(600)"
    holder = subprocess.Popen(
        [sys.executable, "-c", holding, str(pgdata)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        run_pytest_as(worker, ONE_TEST, LOCALNEON_KEEP="0")
        assert (pgdata / "postmaster.pid").exists(), "the pytest that finished stopped a cluster still in use"
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert release(pgdata) and not (pgdata / "postmaster.pid").exists()  # its last user gone: stopped
