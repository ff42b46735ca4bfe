"""Every fixture loads on real PostgreSQL 18 as a non-superuser owner in one transaction, and every
case's reference SQL and reference calls run against it (each in a transaction that is rolled back).
"""

from __future__ import annotations

import re
from contextlib import ExitStack
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from harness.cases import BUNDLED_FIXTURES, Case, ReferenceCall, load_cases, scripts_at
from tests.datasets.pg import execute_and_roll_back, load_fixture, scratch_database

CASES = load_cases()
# A fixture is a file, or a folder of one `<database>.sql` per database (`retail/`).
FIXTURES = sorted(path.stem for path in BUNDLED_FIXTURES.iterdir() if path.suffix == ".sql" or path.is_dir())


# Reference tools that send no SQL of the case's to the database (branches, the project, Neon Auth):
# nothing of theirs to try on the fixture here.
NO_SQL_TOOLS = {
    "create_branch",
    "delete_branch",
    "reset_from_parent",
    "describe_branch",
    "describe_project",
    "list_branch_computes",
    "provision_neon_auth",
    "get_neon_auth_config",
    "configure_neon_auth",
}


def reference_statements(call: ReferenceCall) -> list[str]:
    """The SQL a reference call would run (EXPLAIN for the explain and tuning tools; a lookup for describe)."""
    args = call.arguments
    if call.tool in NO_SQL_TOOLS:
        return []
    if call.tool == "prepare_query_tuning":
        return [f"EXPLAIN {args['sql']}"]
    if call.tool == "run_sql":
        return [str(args["sql"])]
    if call.tool == "run_sql_transaction":
        return [str(sql) for sql in args["sqlStatements"]]
    if call.tool == "explain_sql_statement":
        return [f"EXPLAIN (ANALYZE) {args['sql']}"]
    if call.tool == "describe_table_schema":
        return [f"SELECT '{args['tableName']}'::regclass"]
    assert call.tool == "get_database_tables", f"no SQL known for reference tool {call.tool}"
    return []


class RolledBack:
    """Statements run on a fixture's database and rolled back, each distinct list once: a case and its
    twin (approved, declined) often share a call, and one of them deletes 2400 tickets whose events
    cascade without an index (the tuning cases add it), 1-2 s a run. The answer is kept, so a read
    case's answer is checked against what the database says."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, tuple[str, ...]], Any] = {}

    def run(self, conninfo: str, statements: list[str]) -> Any:
        key = (conninfo, tuple(statements))
        if key not in self._answers:
            self._answers[key] = execute_and_roll_back(conninfo, statements)
        return self._answers[key]


def check_case(databases: dict[str, str], case: Case, ran: RolledBack) -> None:
    """The case's reference SQL in its database, each reference call in the one it names."""
    conninfo = databases[case.target_database]
    if case.reference_sql:
        try:
            ran.run(conninfo, [case.reference_sql])
        except psycopg.Error as error:
            pytest.fail(f"{case.source_file}: case '{case.id}': reference_sql fails on {case.fixture}: {error}")
    for call in case.reference_calls:
        conninfo = databases[str(call.arguments.get("databaseName") or case.target_database)]
        statements = reference_statements(call)
        try:
            value = ran.run(conninfo, statements)
        except psycopg.Error as error:
            pytest.fail(f"{case.source_file}: case '{case.id}': reference call {call.tool} fails: {error}")
        if call.tool == "run_sql" and isinstance(value, int | Decimal):
            # A read question's expert answer must state what the database actually says.
            assert str(value) in re.sub(r"(?<=\d),(?=\d)", "", case.expected_answer), (case.id, value)


@pytest.mark.parametrize("fixture", FIXTURES)
def test_fixture_loads_and_every_reference_runs(pg_server: Any, fixture: str) -> None:
    cases = [case for case in CASES if case.fixture == fixture]
    assert cases, f"fixture {fixture} is used by no case"
    path = BUNDLED_FIXTURES / fixture if (BUNDLED_FIXTURES / fixture).is_dir() else BUNDLED_FIXTURES / f"{fixture}.sql"
    with ExitStack() as stack:
        databases: dict[str, str] = {}
        for database, script in scripts_at(path):
            databases[database] = conninfo = stack.enter_context(scratch_database(pg_server, f"{fixture}_{database}"))
            load_fixture(conninfo, script)
            with psycopg.connect(conninfo) as conn:
                superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
                tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
            assert superuser == (False,) and tables is not None and tables[0] >= 2
        ran = RolledBack()
        for case in cases:
            check_case(databases, case, ran)


def test_a_failing_reference_sql_is_caught(pg_server: Any) -> None:
    """The check above can fail: SQL that parses but is wrong for the fixture raises."""
    with scratch_database(pg_server, "broken") as conninfo:
        load_fixture(conninfo, BUNDLED_FIXTURES / "blog.sql")
        with pytest.raises(psycopg.errors.UndefinedColumn):
            execute_and_roll_back(conninfo, ["ALTER TABLE posts RENAME COLUMN no_such_column TO body"])
        with pytest.raises(psycopg.errors.NotNullViolation):
            execute_and_roll_back(conninfo, ["ALTER TABLE posts ALTER COLUMN published_at SET NOT NULL"])
