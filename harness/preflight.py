"""Check a dataset against its fixtures before any trial: each case's `reference_sql` must run.

Why: a reference SQL that fails on its fixture (a typo in a column name, a table the fixture lacks)
parses fine, so the loader accepts it, and every trial of the case then scores the agent for the
dataset's mistake. Each case's SQL runs once on a sandbox loaded with its fixture, inside a
transaction that is always rolled back, through the server's API like any trial (the harness never
reaches the local server's internals). One sandbox per fixture; results are cached per process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import sys
from collections import defaultdict

import pglast.parser
import psycopg

from harness.cases import Case, DatasetError, loading_database, scripts_at
from harness.config import Settings
from harness.run.shared import shared_local_server
from harness.run.trial import TrialRunner, describe_error

_CHECKED: set[tuple[str, str, str]] = set()  # (server, fixture path, sql) already known to run


def _key(settings: Settings, case: Case) -> tuple[str, str, str]:
    return (settings.server, str(case.fixture_path), case.reference_sql or "")


async def reference_sql_problems(settings: Settings, cases: list[Case]) -> list[str]:
    """One message per case whose reference SQL fails on its fixture (file, case, fixture, error)."""
    pending = [case for case in cases if case.reference_sql and _key(settings, case) not in _CHECKED]
    if not pending:
        return []
    by_fixture: dict[str, list[Case]] = defaultdict(list)
    for case in pending:
        by_fixture[str(case.fixture_path)].append(case)
    problems: list[str] = []
    probe = settings.model_copy(update={"model": "control:oracle"})
    async with TrialRunner(probe, local_server=shared_local_server(probe), write_results=False) as runner:
        assert runner.backend is not None
        backend = runner.backend
        for group in by_fixture.values():
            label = f"{secrets.token_hex(3)}-check-{group[0].fixture}"
            loaded = False
            try:
                async with backend.open_sandbox(group[0], label) as info:
                    loaded = True
                    for database in sorted({case.target_database for case in group}):
                        uri = await backend.connection_uri(info, database)
                        on_it = [case for case in group if case.target_database == database]
                        problems += await _check_group(settings, uri, on_it)
            except psycopg.errors.DatabaseError as error:
                if loaded or error.sqlstate is None:
                    raise  # the connection failed, not the fixture
                raise DatasetError(fixture_problem(group[0], error)) from None
    return problems


async def _check_group(settings: Settings, uri: str, group: list[Case]) -> list[str]:
    """Run each case's reference SQL on the loaded fixture, rolled back; one message per failure."""
    problems: list[str] = []
    async with await psycopg.AsyncConnection.connect(uri, connect_timeout=20) as conn:
        for case in group:
            try:
                async with conn.transaction(force_rollback=True):
                    await conn.execute((case.reference_sql or "").encode())
            except psycopg.errors.DatabaseError as error:
                if error.sqlstate is None:
                    raise  # the connection failed, not the SQL
                if error.sqlstate == "25001":
                    continue  # e.g. CREATE INDEX CONCURRENTLY: cannot be tried in a transaction
                problems.append(
                    f"{case.source_file}: case '{case.id}': reference_sql does not run on fixture "
                    f"'{case.fixture}': {str(error).strip()}"
                )
            else:
                _CHECKED.add(_key(settings, case))
    return problems


def fixture_problem(case: Case, error: psycopg.errors.DatabaseError) -> str:
    """Which fixture failed to load (a folder fixture's file: the database `load_fixture` noted on the
    error), at which statement, and PostgreSQL's words."""
    path = case.fixture_path
    failed_in = loading_database(error)
    if path is not None and failed_in is not None:
        path = dict(scripts_at(path)).get(failed_in, path)
    script = path.read_text(encoding="utf-8") if path is not None and path.is_file() else ""
    where = ""
    position = error.diag.statement_position
    if position and position.isdigit():
        offset = len(script[: int(position) - 1].encode("utf-8"))
        try:
            slices = pglast.parser.split(script, only_slices=True)
        except pglast.parser.ParseError:
            slices = ()
        for number, part in enumerate(slices, start=1):
            if part.start <= offset < (part.stop or 0) + 1:
                statement = " ".join(script.encode("utf-8")[part].decode("utf-8", errors="replace").split())
                where = f" at statement {number} ({statement[:120]})"
                break
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return f"fixture '{case.fixture}' ({path}) does not load{where}: {message}"


def check_reference_sql(settings: Settings, cases: list[Case], timeout: float = 300.0) -> None:
    """Raise DatasetError naming every case whose reference SQL fails on its fixture.

    Callable from synchronous code inside a running loop (a worker thread runs the check). When
    the server cannot be reached, the check is skipped with a warning: the trials will report it.
    """
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(asyncio.run, reference_sql_problems(settings, cases))
    try:
        problems = future.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        print(f"harness: reference SQL not checked (no answer within {timeout:.0f}s)", file=sys.stderr)
        return
    except DatasetError:
        raise
    except Exception as error:
        reason = settings.scrub(describe_error(error))
        print(f"harness: reference SQL not checked (the server failed: {reason})", file=sys.stderr)
        return
    finally:
        pool.shutdown(wait=False)
    if problems:
        raise DatasetError("\n".join(problems))
