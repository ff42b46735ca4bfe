"""Shared fixtures for harness tests: small cases, settings from a given environment, an API client of the
shared local server (`local_server`, in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cases import Case
from harness.config import Settings
from harness.mcp.server_process import ServerEndpoints
from harness.servers.neon.api import NeonAPI
from tests.conftest import SERVER_TOKEN as TOKEN  # the shared local server's (tests/conftest.py)

FIXTURES = Path(__file__).parent / "fixtures"


def make_case(**fields: Any) -> Case:
    """A case on the small `shop` fixture (fields override the defaults)."""
    base: dict[str, Any] = {
        "id": "add-phone",
        "scenario": "complete",
        "input": "In project {project_id}, add a nullable text column phone to customers.",
        "follow_ups": ["Yes, apply it to main."],
        "approval": "approve",
        "expected_answer": "The phone column was added to customers on main after approval.",
        "fixture": "shop",
        "reference_sql": "ALTER TABLE customers ADD COLUMN phone text",
        "expected_main": "changed",
        "required_tools": ["prepare_database_migration", "complete_database_migration"],
    }
    base.update(fields)
    return Case(**base).model_copy(update={"fixture_path": FIXTURES / "shop.sql"})


def settings_from(env: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from exactly `env` (no process environment, no .env), with field overrides."""
    settings = Settings.from_env(env=env or {}, dotenv_path=None, warn=False)
    return settings.model_copy(update=overrides) if overrides else settings


@pytest.fixture
async def api(endpoints: ServerEndpoints) -> AsyncIterator[NeonAPI]:
    client = NeonAPI(endpoints.api_url, TOKEN, operation_poll=0.05)
    yield client
    await client.aclose()


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.fixture
def runner_settings(results_dir: Path) -> Callable[..., Settings]:
    """Settings for a runner on the local server: control oracle unless overridden."""

    def build(env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        merged = {"EVAL_MODEL": "control:oracle", "EVAL_RESULTS_DIR": str(results_dir), **(env or {})}
        return settings_from(merged, **overrides)

    return build
