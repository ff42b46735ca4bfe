"""One snapshot of a branch with two databases (`merge_databases`): the second's schema, tables and
settings are kept apart by name, and the dump is complete only when every database's was."""

from __future__ import annotations

from harness.recording.records import DUMP_COMPLETE_MARKER, Snapshot, TableFingerprint
from harness.servers.neon.state import merge_databases

DUMP = "--\n-- PostgreSQL database dump\n--\n{body}\n--\n-- " + DUMP_COMPLETE_MARKER + "\n--\n"


def part(body: str, tables: dict[str, int], *, complete: bool = True, error: str | None = None) -> Snapshot:
    schema = DUMP.format(body=body) if complete else f"--\n{body}\n"
    fingerprints = {name: TableFingerprint(rows=rows, content_hash=f"h{rows}") for name, rows in tables.items()}
    return Snapshot(schema_sql=schema, tables=fingerprints, environment={"grants": [f"{body} g"]}, error=error)


def test_one_database_is_its_own_snapshot() -> None:
    only = part("CREATE TABLE public.orders ();", {"public.orders": 3})
    assert merge_databases({"neondb": only}) is only


def test_a_second_database_is_kept_apart_by_name_and_the_dump_is_complete_once() -> None:
    merged = merge_databases(
        {
            "neondb": part("CREATE TABLE public.orders ();", {"public.orders": 3}),
            "reporting": part("CREATE TABLE public.orders (day date);", {"public.orders": 9}),
        }
    )
    assert merged.tables == {
        "public.orders": TableFingerprint(rows=3, content_hash="h3"),
        "reporting/public.orders": TableFingerprint(rows=9, content_hash="h9"),
    }
    assert merged.environment == {
        "grants": ["CREATE TABLE public.orders (); g"],
        "reporting/grants": ["CREATE TABLE public.orders (day date); g"],
    }
    assert merged.schema_sql is not None and merged.dump_complete and merged.error is None
    assert merged.schema_sql.count(DUMP_COMPLETE_MARKER) == 1
    assert merged.schema_sql.index("-- database reporting") < merged.schema_sql.index("(day date)")


def test_the_dump_is_incomplete_when_one_database_s_is() -> None:
    merged = merge_databases(
        {
            "neondb": part("CREATE TABLE public.orders ();", {}),
            "reporting": part("CREATE TABLE public.orders (day", {}, complete=False),
        }
    )
    assert merged.schema_sql is not None and not merged.dump_complete


def test_a_failed_database_fails_the_capture_naming_it_and_its_fault() -> None:
    failed = part("", {}, error="data: connection refused")
    failed.fault = "model"
    merged = merge_databases({"neondb": part("CREATE TABLE t ();", {"public.t": 1}), "reporting": failed})
    assert merged.error == "database reporting: data: connection refused" and merged.fault == "model"
    failed.fault = "infrastructure"
    both = merge_databases({"neondb": part("", {}, error="schema: timeout"), "reporting": failed})
    assert both.fault == "infrastructure" and both.error is not None and both.error.startswith("database neondb")
