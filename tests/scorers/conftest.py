"""Real snapshots for scorer tests, captured from the embedded PostgreSQL 18 (pg_dump 18 adds
random `\\restrict` keys, so two dumps of one schema differ as raw text), plus record builders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from harness.cases import BUNDLED_FIXTURES, Case, load_cases
from harness.recording.records import Snapshot, ToolCall, TrialConfig, TrialRecord
from localneon.cluster.pg import Cluster
from tests.datasets.pg import load_fixture, scratch_database, snapshot, start_server

ADD_DESCRIPTION = "ALTER TABLE posts ADD COLUMN description text;"


@dataclass(frozen=True)
class Captured:
    """Snapshots of the blog fixture in several states, each in its own freshly loaded database."""

    before: Snapshot
    before_again: Snapshot  # same database dumped again: a different \restrict key
    after_add_column: Snapshot  # ADD_DESCRIPTION applied to main
    expected_add_column: Snapshot  # ADD_DESCRIPTION applied to a separate fresh copy
    after_deletes: Snapshot  # 10 comments deleted: same schema, fewer rows
    after_update: Snapshot  # view counts changed: same schema, same row counts
    after_drop_tags: Snapshot  # post_tags and tags dropped


def _state(server: Cluster, label: str, statements: list[str], dumps: int = 1) -> list[Snapshot]:
    with scratch_database(server, label) as conninfo:
        load_fixture(conninfo, BUNDLED_FIXTURES / "blog.sql")
        with psycopg.connect(conninfo, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)
        return [snapshot(conninfo) for _ in range(dumps)]


@pytest.fixture(scope="session")
def captured() -> Captured:
    server = start_server()
    before, before_again = _state(server, "before", [], dumps=2)
    return Captured(
        before=before,
        before_again=before_again,
        after_add_column=_state(server, "added", [ADD_DESCRIPTION])[0],
        expected_add_column=_state(server, "expected", [ADD_DESCRIPTION])[0],
        after_deletes=_state(server, "deletes", ["DELETE FROM comments WHERE id <= 10"])[0],
        after_update=_state(server, "update", ["UPDATE posts SET view_count = view_count + 1 WHERE id = 7"])[0],
        after_drop_tags=_state(server, "drop", ["DROP TABLE post_tags", "DROP TABLE tags"])[0],
    )


CASES = {case.id: case for case in load_cases()}


def case(case_id: str) -> Case:
    return CASES[case_id]


def record(
    case_id: str,
    calls: list[ToolCall] | None = None,
    **fields: Any,
) -> TrialRecord:
    """A trial record for a bundled case with sensible defaults for everything not under test."""
    bundled = CASES[case_id]
    defaults: dict[str, Any] = {
        "case_id": case_id,
        "config": TrialConfig(model="anthropic:claude-sonnet-4-6", server="local"),
        "project_id": "proj-test-123",
        "default_branch_id": "br-main-1",
        "default_branch_name": "main",
        "input": bundled.render(bundled.input, "proj-test-123"),
        "follow_ups": list(bundled.follow_ups),
        "final_answer": "I prepared the migration on a temporary branch. Apply it to main?",
        "tool_calls": calls or [],
    }
    return TrialRecord(**{**defaults, **fields})


def call(name: str, number: int = 1, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"toolu_{number}", name=name, arguments=arguments, turn=number)
