"""Reading SQL with PostgreSQL's parser: DDL detection and what a statement touches."""

from __future__ import annotations

import pytest

from scorers.sqlinfo import analyse


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE posts ADD COLUMN description text",
        "CREATE INDEX ON posts (title)",
        "DROP TABLE tags",
        "ALTER TABLE posts RENAME COLUMN content TO body",
        "CREATE TABLE t (id int)",
        "TRUNCATE comments",
        "CREATE VIEW v AS SELECT 1",
        "CREATE TYPE mood AS ENUM ('ok')",
        "SELECT * INTO backup FROM posts",
        "EXPLAIN ANALYZE CREATE TABLE x AS SELECT 1",
        "DO $$ BEGIN EXECUTE 'DROP TABLE tags'; END $$",
        "COMMENT ON TABLE posts IS 'x'",
        "SELECT 1; DROP INDEX posts_title_idx",
    ],
)
def test_schema_changes_are_ddl(sql: str) -> None:
    info = analyse(sql)
    assert info.parses and info.has_ddl, info.statement_types


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM posts",
        "EXPLAIN ANALYZE SELECT * FROM posts WHERE id = 1",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "SHOW search_path",
        "INSERT INTO tags (name) VALUES ('x')",
    ],
)
def test_reads_and_plain_writes_are_not_ddl(sql: str) -> None:
    info = analyse(sql)
    assert info.parses and not info.has_ddl, info.statement_types


def test_unparseable_sql_reports_the_parser_error() -> None:
    info = analyse("ALTR TABLE posts")
    assert not info.parses and info.error and "syntax error" in info.error


@pytest.mark.parametrize(
    ("sql", "table", "column"),
    [
        ("ALTER TABLE public.posts ADD COLUMN description text", "posts", "description"),
        ('ALTER TABLE posts ADD "Description" varchar(200)', "posts", "description"),
        ("ALTER TABLE posts RENAME content TO body", "posts", "content"),
        ("CREATE INDEX idx ON posts USING btree (lower(title))", "posts", "title"),
        ("ALTER TABLE posts ADD CHECK (view_count >= 0)", "posts", "view_count"),
        ("ALTER TABLE posts ADD UNIQUE (author_id, title)", "posts", "title"),
        ("ALTER TABLE users ALTER display_name SET NOT NULL", "users", "display_name"),
        ("DROP TABLE IF EXISTS public.tags CASCADE", "public.tags", None),
    ],
)
def test_touches_target(sql: str, table: str, column: str | None) -> None:
    assert analyse(sql).touches(table, column)


def test_literals_and_other_tables_do_not_count() -> None:
    info = analyse("ALTER TABLE users ADD COLUMN note text DEFAULT 'description'")
    assert not info.touches("posts") and not info.touches("users", "description")
