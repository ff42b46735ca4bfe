"""The embedded PostgreSQL server for dataset tests (started once per session)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.datasets.pg import start_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    yield start_server()
