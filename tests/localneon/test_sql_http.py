"""POST /sql over real HTTP: the options neon() can send, beyond what tests/localneon/test_neon_clients.py drives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj


@pytest.fixture
def post(http_server: HttpServer, neon: Neon, project: Proj) -> Iterator[Any]:
    """POST a body to /sql for the project's main database, with extra headers."""
    uri = neon.uri(neon.target(project.id))

    with httpx.Client(timeout=60) as http:

        def send(body: dict[str, Any], **headers: str) -> httpx.Response:
            return http.post(f"{http_server.url}/sql", json=body, headers={"Neon-Connection-String": uri, **headers})

        yield send


def test_object_rows_and_json_values_without_raw_text(post: Any) -> None:
    query = {"query": "SELECT 2::int AS n, true AS b, '{\"k\": [1]}'::jsonb AS j, 10::bigint AS big, 'x' AS t"}
    raw = post(query, **{"Neon-Raw-Text-Output": "true", "Neon-Array-Mode": "true"}).json()
    assert raw["rows"] == [["2", "t", '{"k": [1]}', "10", "x"]] and raw["rowAsArray"] is True
    typed = post(query).json()
    assert typed["rows"] == [{"n": 2, "b": True, "j": {"k": [1]}, "big": "10", "t": "x"}]
    assert typed["rowAsArray"] is False
    assert [f["dataTypeID"] for f in typed["fields"]] == [23, 16, 3802, 20, 25]


def test_a_read_only_batch_refuses_writes_and_changes_nothing(post: Any) -> None:
    batch = {"queries": [{"query": "DELETE FROM posts", "params": []}]}
    refused = post(batch, **{"Neon-Batch-Read-Only": "true", "Neon-Batch-Isolation-Level": "RepeatableRead"})
    assert refused.status_code == 400 and refused.json()["code"] == "25006", refused.text
    count = post({"query": "SELECT count(*) AS n FROM posts"}, **{"Neon-Raw-Text-Output": "true"})
    assert count.json()["rows"] == [{"n": "50"}]


def test_isolation_level_is_applied(post: Any) -> None:
    batch = {"queries": [{"query": "SHOW transaction_isolation", "params": []}]}
    body = post(batch, **{"Neon-Batch-Isolation-Level": "Serializable", "Neon-Batch-Deferrable": "true"}).json()
    assert body["results"][0]["rows"] == [{"transaction_isolation": "serializable"}]


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        ({"queries": [{"query": "SELECT 1"}]}, {"Neon-Batch-Isolation-Level": "Chaos"}, "Serializable"),
        ({"query": "SELECT 1"}, {"Neon-Array-Mode": "maybe"}, "Neon-Array-Mode"),
        ({"params": []}, {}, '"query"'),
        ({"queries": "SELECT 1"}, {}, '"queries"'),
        ({"query": "SELECT $1", "params": "x"}, {}, '"params"'),
    ],
)
def test_bad_requests_name_what_is_wrong(
    post: Any, body: dict[str, Any], headers: dict[str, str], expected: str
) -> None:
    response = post(body, **headers)
    assert response.status_code == 400 and expected in response.json()["message"], response.text


def test_postgres_errors_keep_their_fields(post: Any) -> None:
    wrong_count = post({"query": "SELECT $1::int, $2::int", "params": ["1"]}).json()
    assert wrong_count["code"] == "08P01" and "requires 2" in wrong_count["message"]
    several = post({"query": "SELECT 1; SELECT 2"}).json()
    assert several["code"] == "42601" and "multiple commands" in several["message"]
    copy = post({"query": "COPY posts TO STDOUT"})
    assert copy.status_code == 400 and "COPY is not available" in copy.json()["message"]
    missing = post({"query": "SELECT nope FROM posts"}).json()
    assert missing["code"] == "42703" and missing["position"] == "8" and missing["severity"] == "ERROR"


def test_explain_filecache_is_accepted(post: Any) -> None:
    body = post({"query": "EXPLAIN (ANALYZE, FILECACHE, FORMAT JSON) SELECT * FROM posts WHERE id = $1", "params": [3]})
    assert body.status_code == 200, body.text
    plan = body.json()["rows"][0]["QUERY PLAN"]
    assert plan[0]["Plan"]["Actual Rows"] == 1
