"""Suite-wide hooks: a test run leaves no PostgreSQL running, whether started by `make test` or plain `pytest`."""

from __future__ import annotations

import os

import pytest

from localneon.pg import stop_embedded
from tests.pgdirs import FAULTS_PGDATA, SCORER_PGDATA, TEST_PGDATA


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each process stops the clusters of its own worker once its tests (and their fixtures) are done.

    The xdist controller runs no tests and has no clusters: it must not stop the unsuffixed ones,
    which a plain `pytest` beside it may be using. `LOCALNEON_KEEP=1` keeps them for the next run.
    """
    is_xdist_controller = not hasattr(session.config, "workerinput") and bool(
        getattr(session.config.option, "numprocesses", None)
    )
    if is_xdist_controller or os.environ.get("LOCALNEON_KEEP") == "1" or "DATABASE_URL" in os.environ:
        return
    for pgdata in (TEST_PGDATA, SCORER_PGDATA, FAULTS_PGDATA):
        stop_embedded(pgdata)
