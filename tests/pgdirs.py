"""Where the tests' embedded PostgreSQL clusters live: one set per pytest-xdist worker.

`make test` runs the suite in parallel workers. Tests that count databases, roles or orphans in
a cluster must not see another worker's, so each worker (`PYTEST_XDIST_WORKER`, e.g. `gw0`) gets
its own data directories; a plain `pytest` run uses the unsuffixed ones. Each process stops its own
when its tests are done (`tests/conftest.py`), and `make test` stops them all after an interrupted run.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def cluster_dir(name: str) -> Path:
    """The data directory `name` of this worker (`.localneon/<name>` or `.localneon/<name>-<worker>`)."""
    return REPO_ROOT / ".localneon" / (f"{name}-{WORKER}" if WORKER else name)


TEST_PGDATA = cluster_dir("test-pgdata")  # localneon servers of harness, eval and analysis tests
SCORER_PGDATA = cluster_dir("scorer-test-pgdata")  # fixtures and dumps for dataset and scorer tests
FAULTS_PGDATA = cluster_dir("faults-pgdata")  # fault runs, whose leftover checks need a quiet cluster
