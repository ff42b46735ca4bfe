"""The embedded PostgreSQL server for dataset tests (started once per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from localneon.cluster.pg import Cluster
from tests.datasets.pg import start_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Cluster]:
    yield start_server()
