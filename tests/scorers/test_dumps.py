"""Dump normalisation removes exactly what varies between dumps of one schema."""

from __future__ import annotations

from harness.recording.dumps import normalise_dump
from scorers.dumps import DIFF_LINE_CAP, capped_diff
from tests.scorers.conftest import Captured


def test_real_pg18_dumps_of_one_schema_differ_raw_but_not_normalised(captured: Captured) -> None:
    first, second = captured.before.schema_sql, captured.before_again.schema_sql
    assert first and second and "\\restrict " in first and "\\unrestrict " in first
    assert first != second  # random keys
    assert normalise_dump(first) == normalise_dump(second)
    normalised = normalise_dump(first)
    assert "restrict" not in normalised and "Dumped by pg_dump" not in normalised and "\n\n\n" not in normalised
    assert "CREATE TABLE public.posts (" in normalised and "PostgreSQL database dump complete" in normalised


def test_normalisation_keeps_schema_differences(captured: Captured) -> None:
    assert captured.before.schema_sql and captured.after_add_column.schema_sql
    before = normalise_dump(captured.before.schema_sql)
    after = normalise_dump(captured.after_add_column.schema_sql)
    assert before != after
    diff, count = capped_diff(before, after, "before", "after")
    assert "+    description text" in diff and count > 0


def test_preamble_and_version_differences_are_ignored() -> None:
    one = "--\n-- Dumped from database version 17.2\nSET lock_timeout = 0;\n\n\n\nCREATE TABLE t (a int);\n"
    two = "--\n-- Dumped from database version 18.6\nSELECT pg_catalog.set_config('search_path', '', false);\n"
    two += "CREATE TABLE t (a int);   \n\n"
    assert normalise_dump(one) == normalise_dump(two) == "--\nCREATE TABLE t (a int);\n"
    assert normalise_dump(one) != normalise_dump(one.replace("(a int)", "(a bigint)"))


def test_diff_is_capped() -> None:
    before = "\n".join(f"line {n}" for n in range(500))
    after = "\n".join(f"other {n}" for n in range(500))
    diff, count = capped_diff(before, after, "a", "b")
    assert count > DIFF_LINE_CAP
    assert len(diff.splitlines()) == DIFF_LINE_CAP + 1 and diff.endswith("more diff lines")
