"""Neon's EXPLAIN option FILECACHE: dropped by the parser, and accepted by localneon's own SQL tools."""

from __future__ import annotations

import json

import pytest

from localneon.engine.explain_options import without_neon_explain_options
from tests.localneon.helpers import HttpServer, Proj, call, http_client, ok


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            "EXPLAIN (ANALYZE, VERBOSE, BUFFERS, FILECACHE, FORMAT JSON) SELECT 1",
            "EXPLAIN (analyze, verbose, buffers, format json) SELECT 1",
        ),
        ("explain (filecache) select 1", "EXPLAIN SELECT 1"),
        ("EXPLAIN (FILECACHE false, COSTS off) SELECT 1", "EXPLAIN (costs off) SELECT 1"),
        # Other statements keep their exact text, comments and the byte offsets after a multi-byte literal.
        (
            "SELECT 'é' /* keep */; EXPLAIN (FILECACHE) SELECT 2; select   3",
            "SELECT 'é' /* keep */; EXPLAIN SELECT 2; select   3",
        ),
    ],
)
def test_filecache_is_removed(given: str, expected: str) -> None:
    assert without_neon_explain_options(given) == expected


@pytest.mark.parametrize(
    "untouched",
    [
        "SELECT 'FILECACHE' AS filecache",  # the word, not the option
        "EXPLAIN (ANALYZE) SELECT filecache FROM t",
        "EXPLAIN (FILECACHE, oops",  # does not parse: PostgreSQL reports the syntax error itself
        "SELECT 1",
    ],
)
def test_everything_else_is_left_as_it_is(untouched: str) -> None:
    assert without_neon_explain_options(untouched) == untouched


async def test_run_sql_tools_accept_filecache(http_server: HttpServer, project: Proj) -> None:
    statement = "EXPLAIN (ANALYZE, FILECACHE, FORMAT JSON) SELECT * FROM posts WHERE id = 7"
    async with http_client(http_server) as client:
        single = json.loads(ok(await call(client, "run_sql", projectId=project.id, sql=statement)))
        batch = json.loads(
            ok(await call(client, "run_sql_transaction", projectId=project.id, sqlStatements=[statement, "SELECT 1"]))
        )
    assert single[0]["QUERY PLAN"][0]["Plan"]["Actual Rows"] == 1
    assert batch[0][0]["QUERY PLAN"][0]["Plan"]["Actual Rows"] == 1
