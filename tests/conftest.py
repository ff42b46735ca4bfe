"""Suite-wide: which cluster a test process uses, and that it leaves none running (`make test` or plain `pytest`)."""

from __future__ import annotations

import os

import pytest

from localneon.pg import release
from tests.pgdirs import FAULTS_PGDATA, SCORER_PGDATA, TEST_PGDATA

# Every local server and cluster a test process starts uses this worker's test data directory, never
# the developer's. Set, not defaulted, and here, where every process (xdist controller and workers)
# reads it first: a worker inherits the controller's environment, and defaulting would keep the
# controller's unsuffixed value, so that all workers shared one cluster that none of them stopped.
if "DATABASE_URL" not in os.environ:
    os.environ["LOCALNEON_PGDATA"] = str(TEST_PGDATA)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each process releases the clusters of its own worker once its tests (and their fixtures) are
    done: the last live user of a cluster stops it, so a second `pytest` in the same checkout keeps
    the cluster it is still using.

    The xdist controller runs no tests and has no clusters: it must not stop the unsuffixed ones,
    which a plain `pytest` beside it may be using. `LOCALNEON_KEEP=1` keeps them for the next run.
    """
    is_xdist_controller = not hasattr(session.config, "workerinput") and bool(
        getattr(session.config.option, "numprocesses", None)
    )
    if is_xdist_controller or os.environ.get("LOCALNEON_KEEP") == "1" or "DATABASE_URL" in os.environ:
        return
    for pgdata in (TEST_PGDATA, SCORER_PGDATA, FAULTS_PGDATA):
        release(pgdata, os.getpid())
