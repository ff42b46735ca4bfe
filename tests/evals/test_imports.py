"""Importing an eval file declares its `Eval`s and nothing more (issue 25, item 3).

`braintrust eval --list evals/` with a Braintrust key and the gateway judge configured (the
recording stand-in) used to ask the judge, start PostgreSQL and probe the tool list; now the
CLI's own login is the only request and no cluster is created. That the checks still run, at the run's start and before
any trial, is what `tests/faults/test_start_checks.py` holds; its wall time is measured by
`python -m braintrust_run.bench_list`, never asserted here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.evals.cli import offline_env, run_in_repo
from tests.fakes.braintrust_server import FakeBraintrust


def test_listing_the_evals_asks_no_judge_and_starts_no_postgres(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"  # a cluster no one has made: a start would initialise it here
    with FakeBraintrust() as braintrust:
        env = offline_env(tmp_path / "results", **braintrust.env()) | {
            "LOCALNEON_PGDATA": str(pgdata),
            "EVAL_JUDGE_PROVIDER": "braintrust",  # a judge whose preflight the stand-in would record
        }
        cli = str(Path(sys.executable).parent / "braintrust")
        completed = run_in_repo([cli, "eval", "--list", "evals"], env, timeout=120)
        requests = [f"{request.method} {request.path}" for request in braintrust.requests]
    assert completed.returncode == 0, completed.stderr[-3000:]
    listed = [line for line in completed.stdout.splitlines() if "experiment_name=" in line]
    assert len(listed) == 6, completed.stdout  # three evals, both control agents
    # The CLI's own login (it logs in unless told --no-send-logs, listing or not), and nothing else:
    # no judge preflight, no experiment listing for a base.
    assert set(requests) <= {"POST /api/apikey/login"}, requests
    assert not pgdata.exists() and not list(tmp_path.glob(".pgdata.leases*")), "listing started PostgreSQL"
    assert not (tmp_path / "results").exists()
