"""Two terminals, one checkout: runs share the embedded PostgreSQL, and the last one out stops it.

Each process that opens the cluster holds a lease on it (`localneon.pg`); `make` releases after a
command instead of stopping the cluster outright, so a one-case `make eval` ending beside a long one
no longer stops the PostgreSQL under it. And `braintrust eval evals/`, the mission's own command,
stops the cluster it started when it ends.
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from harness.recording.store import load_run
from localneon.cluster.locks import ROLE_COMMENT_PREFIX
from localneon.cluster.pg import start_embedded
from tests.evals.cli import offline_env, run_cli, run_in_repo
from tests.faults.conftest import (
    EVAL_FILE,
    SMALL_DATASET,
    own_cluster_dir,
    processes_of,
    start_job,
    wait_for_records,
)

ONE_CASE = SMALL_DATASET.split("  - id: fault-add-rating")[0]


def run_env(tmp_path: Path, name: str, pgdata: Path, dataset: str, **extra: str) -> dict[str, str]:
    """An offline run with the control oracle on `dataset`, on cluster `pgdata`, with a TMPDIR of its own."""
    folder = tmp_path / name
    (folder / "tmp").mkdir(parents=True)
    cases = folder / "cases.yaml"
    cases.write_text(dataset)
    return offline_env(
        tmp_path / "results",
        EVAL_RUN_ID=f"{name}-{secrets.token_hex(3)}",
        EVAL_DATASET=str(cases),
        EVAL_MODEL="control:oracle",
        LOCALNEON_PGDATA=str(pgdata),
        TMPDIR=str(folder / "tmp"),
        **extra,
    )


def outcomes(env: dict[str, str]) -> list[str]:
    _, records = load_run(Path(env["EVAL_RESULTS_DIR"]) / env["EVAL_RUN_ID"])
    return [record.outcome for record in records]


def assert_nothing_left(pgdata: Path, *envs: dict[str, str]) -> None:
    """No PostgreSQL running on `pgdata`, no process of the runs, and (opened again to look) no project,
    database or role of theirs in it."""
    assert not (pgdata / "postmaster.pid").exists(), "the embedded PostgreSQL is still running"
    from localneon.cluster import leases  # here: the check above is what the code before leases failed

    assert leases.live(pgdata) == [], "a lease outlived its run"
    for env in envs:
        assert processes_of(Path(env["TMPDIR"])) == []
    cluster = start_embedded(pgdata)  # this test's own lease; the cluster is removed when the test ends
    with psycopg.connect(cluster.conninfo("postgres"), autocommit=True) as admin:
        databases = [row[0] for row in admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'ln\\_%'")]
        roles = [
            row[0]
            for row in admin.execute(
                "SELECT rolname FROM pg_roles WHERE shobj_description(oid, 'pg_authid') LIKE %s",
                (ROLE_COMMENT_PREFIX + "%",),
            )
        ]
    with psycopg.connect(cluster.conninfo("localneon_catalog"), autocommit=True) as catalog:
        projects = [row[0] for row in catalog.execute("SELECT name FROM projects")]
    assert (projects, databases, roles) == ([], [], []), "left behind in the cluster"


@pytest.mark.long  # two whole make evals; test_leases.py and the test below check the leases
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_two_overlapping_make_evals_share_the_cluster_and_leave_nothing(
    tmp_path: Path, request: pytest.FixtureRequest, reaped: list[subprocess.Popen[str]]
) -> None:
    pgdata = own_cluster_dir(request, f"two-runs-{secrets.token_hex(3)}")
    # Long enough to outlast the short run on the disposable cluster (12 trials a case no longer did).
    long_env = run_env(tmp_path, "long", pgdata, SMALL_DATASET, EVAL_TRIALS="30", EVAL_CONCURRENCY="2")
    short_env = run_env(tmp_path, "short", pgdata, ONE_CASE, EVAL_TRIALS="1")
    long = start_job(["make", "-s", "eval"], long_env)
    reaped.append(long)
    wait_for_records(long, tmp_path / "results" / long_env["EVAL_RUN_ID"] / "trials.jsonl", 2, timeout=300)

    short = run_in_repo(["make", "-s", "eval"], short_env, timeout=600)
    assert short.returncode == 0, short.stderr[-3000:]
    assert long.poll() is None, "the long run ended before the short one: nothing overlapped"
    time.sleep(1.0)  # the long run goes on after the short one's `make` released the cluster
    _, long_err = long.communicate(timeout=600)

    assert long.returncode == 0, long_err[-3000:]
    assert outcomes(short_env) == ["ok"]
    assert outcomes(long_env) == ["ok"] * 60, long_err[-3000:]  # two cases, 30 trials each
    assert_nothing_left(pgdata, long_env, short_env)
    opens_the_report(short.stderr, short_env)


def opens_the_report(stderr: str, env: dict[str, str]) -> None:
    """`make eval` ends by naming its records and the command that opens the report: that command works."""
    run_dir = Path(env["EVAL_RESULTS_DIR"]) / env["EVAL_RUN_ID"]
    assert f"evals: records in {run_dir}/trials.jsonl" in stderr, stderr[-2000:]
    found = re.search(r"^evals: report: (\S+) -m analysis\.report (\S+)  \(writes (\S+)\)$", stderr, re.MULTILINE)
    assert found is not None, stderr[-2000:]
    python, run, page = found.groups()
    assert Path(run) == run_dir and Path(page) == run_dir / "report.html"
    report = run_in_repo([python, "-m", "analysis.report", run], env)
    assert report.returncode == 0 and (run_dir / "report.html").exists(), report.stderr[-2000:]


def test_braintrust_eval_stops_the_postgresql_it_started(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The mission's command, not `make eval`: nothing runs after it has exited."""
    pgdata = own_cluster_dir(request, f"bt-eval-{secrets.token_hex(3)}")
    env = run_env(tmp_path, "cli", pgdata, ONE_CASE, EVAL_TRIALS="1")
    completed = run_cli(env, EVAL_FILE, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert outcomes(env) == ["ok"]
    assert (pgdata / "PG_VERSION").exists(), "the run used its own cluster"
    assert_nothing_left(pgdata, env)
