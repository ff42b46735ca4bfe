"""Dumps equal up to what a user cannot tell apart, on real pg_dump 18 output of the blog fixture:
an index or constraint name nobody gave, a view's query written another way; a name the user gave, a
different column or a different condition still differ."""

from __future__ import annotations

import psycopg
import pytest

from harness.cases import BUNDLED_FIXTURES
from harness.recording.dumps import normalise_dump
from scorers.schema_equivalence import equivalent
from tests.datasets.pg import dump_schema, load_fixture, scratch_database, start_server

VIEW = "CREATE VIEW post_authors AS SELECT p.id, u.username FROM posts p JOIN users u ON {on} WHERE {where}"
STATES = {
    "index_a": ["CREATE INDEX posts_title_idx ON posts (title)"],
    "index_b": ["CREATE INDEX idx_posts_title ON posts USING btree (title)"],
    "index_other_column": ["CREATE INDEX posts_title_idx ON posts (slug)"],
    "check_a": [
        "ALTER TABLE posts ADD CONSTRAINT posts_status_check CHECK (status IN ('draft', 'published', 'archived'))"
    ],
    "check_b": ["ALTER TABLE posts ADD CONSTRAINT status_ok CHECK (status IN ('draft', 'published', 'archived'))"],
    "view_a": [VIEW.format(on="u.id = p.author_id", where="p.status = 'published' AND p.view_count > 0")],
    "view_b": [VIEW.format(on="p.author_id = u.id", where="p.view_count > 0 AND 'published' = p.status")],
    "view_other": [VIEW.format(on="u.id = p.author_id", where="p.status = 'draft' AND p.view_count > 0")],
}


@pytest.fixture(scope="module")
def dumps() -> dict[str, str]:
    server = start_server()
    found = {}
    for label, statements in STATES.items():
        with scratch_database(server, f"equiv_{label}") as conninfo:
            load_fixture(conninfo, BUNDLED_FIXTURES / "blog.sql")
            with psycopg.connect(conninfo, autocommit=True) as conn:
                for statement in statements:
                    conn.execute(statement)
            found[label] = normalise_dump(dump_schema(conninfo))
    return found


@pytest.mark.parametrize(("a", "b"), [("index_a", "index_b"), ("check_a", "check_b"), ("view_a", "view_b")])
def test_the_same_object_under_a_name_nobody_gave_or_written_otherwise_is_equal(
    dumps: dict[str, str], a: str, b: str
) -> None:
    assert dumps[a] != dumps[b]
    assert equivalent(dumps[a], dumps[b], "Add an index on the title column of posts, please.")


def test_a_name_the_user_gave_must_match(dumps: dict[str, str]) -> None:
    assert not equivalent(dumps["index_a"], dumps["index_b"], "Create an index posts_title_idx on posts (title).")
    assert not equivalent(dumps["check_a"], dumps["check_b"], "Add a check constraint posts_status_check.")


@pytest.mark.parametrize(("a", "b"), [("index_a", "index_other_column"), ("view_a", "view_other")])
def test_a_different_definition_still_differs(dumps: dict[str, str], a: str, b: str) -> None:
    assert not equivalent(dumps[a], dumps[b], "anything")
