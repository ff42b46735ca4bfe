"""The bounds a model's SQL cannot lift (their numbers come from ``localneon.settings``).

A session's ``statement_timeout`` is the model's to change (``SET statement_timeout = 0``), a
PL/pgSQL block can catch the cancel that ends a statement, and psycopg's cursor reads a statement's
whole result into memory before its first row (20 rows of 10 MB held 200 MB). So the twin runs a
model's SQL here: libpq's single-row mode (each row is read as it arrives, and the caller stops
keeping rows at its byte limit) and every wait a ``select()`` against the call's deadline. Past the
deadline the backend is cancelled, and after a short grace ended by the superuser
(``pg_terminate_backend``), which no SQL can catch. Waiting in ``select()`` also leaves the GIL
free for the server's other requests (libpq's blocking calls hold it).

The disk every project shares is bounded twice. Temporary files (sorts, hashes, materialised CTEs,
held cursors) by PostgreSQL's ``temp_file_limit``, which only a superuser may set: the twin sets it
on every role a model's SQL runs as (``hold_on_role``), and the role can neither ``SET`` it nor
reset it on itself or its database. What a call writes into the database (tables, indexes, unlogged
and temporary tables, large objects) no PostgreSQL setting bounds, so the watchdog does, as Neon's
project size limit does: while a call runs it reads the database's size, first after
``FIRST_POLL_S``, then at twice the last wait up to ``SIZE_POLL_S``, sooner the faster the database
grows (half the time the last reading's rate needs to fill what is left under the limit), and a call that grows
a database past ``BRANCH_SIZE_LIMIT_MB`` is ended with Neon's own error (SQLSTATE 53100). A fixed
0.25 s let a ``CREATE TABLE ... AS`` on the disposable cluster (no WAL for a new table, no fsync)
write 140 MB past a 40 MB limit before the first reading. A call that starts over the limit is
watched from its first moment, so reads and deletes still work there and growth is stopped within
``OVER_POLL_S``. Memory is bounded where the
cluster starts (``localneon.cluster.pg``): settings such as ``work_mem`` are any role's to raise.
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict

from localneon import settings

STATEMENT_TIMEOUT_S = settings.statement_timeout_s()
MAX_RESULT_BYTES = settings.max_result_bytes()
MAX_SQL_BODY_BYTES = settings.max_sql_body_bytes()
TEMP_FILE_LIMIT_MB = settings.temp_file_limit_mb()
BRANCH_SIZE_LIMIT_MB = settings.branch_size_limit_mb()
GRACE_S = 2.0  # after the cancel, before the superuser ends the backend
SIZE_POLL_S = 0.05  # the longest a running call's database size goes unread
FIRST_POLL_S = 0.01  # the first reading, after the call started (calls shorter than this are never read)
MIN_POLL_S = 0.005  # the shortest time between readings, however fast the database grows
OVER_POLL_S = 0.05  # between readings for a call that started over the size limit
SIZE_SLACK_BYTES = 1024 * 1024  # what a call that started over the limit may still add
# How a call reads its database's size before its SQL, on its own connection. pg_stat_statements
# records it under the project's role: the twin's views of that extension leave it out.
SIZE_PROBE = "SELECT pg_catalog.pg_database_size(pg_catalog.current_database())"
_COPY = (pq.ExecStatus.COPY_IN, pq.ExecStatus.COPY_OUT, pq.ExecStatus.COPY_BOTH)

# Superuser conninfos by server (host, port): how the watchdog reaches a role connection's server.
_ADMINS: dict[tuple[str, str], str] = {}


def _server(conninfo: str) -> tuple[str, str]:
    params = conninfo_to_dict(conninfo)
    return str(params.get("host") or ""), str(params.get("port") or "5432")


def register_admin(admin_conninfo: str) -> None:
    """Let the watchdog end backends on this server as its superuser (``Neon`` registers its cluster)."""
    _ADMINS[_server(admin_conninfo)] = admin_conninfo


def statement_timeout_ms() -> int:
    """The session-level timeout given to every connection too (a first line, the watchdog the last)."""
    return int(STATEMENT_TIMEOUT_S * 1000)


def hold_on_role(admin: psycopg.Connection[Any], role: str) -> None:
    """Put the temp-file limit on ``role`` as the superuser (``admin``): ``temp_file_limit`` may be set
    by superusers only, so the role cannot ``SET`` it, nor reset it on itself or its database, and
    its ``ALTER ROLE ... RESET ALL`` keeps it. Called wherever the twin makes or resets a role."""
    if TEMP_FILE_LIMIT_MB > 0:
        limit = sql.Literal(f"{TEMP_FILE_LIMIT_MB}MB")
        admin.execute(sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(sql.Identifier(role), limit))


class Bound(psycopg.Error):
    """Marks an error the twin raised because a call passed one of its bounds (the backend was ended)."""


class BoundExceeded(psycopg.errors.QueryCanceled, Bound):
    """The twin ended a call that ran past STATEMENT_TIMEOUT_S, whatever the session had set."""


class SizeLimitExceeded(psycopg.errors.DiskFull, Bound):
    """The twin ended a call that grew its database past BRANCH_SIZE_LIMIT_MB (SQLSTATE 53100)."""


def size_limit_message(limit_mb: int) -> str:
    """Neon's own words for a branch past its project size limit (``pgxn/neon/pagestore_smgr.c``)."""
    return f"could not extend file because project size limit ({limit_mb} MB) has been exceeded"


class Watchdog:
    """One call's bounds on one connection: its deadline (cancel at the bound, terminate after the
    grace) and the size of its database (the same steps once the call grows it past the limit)."""

    def __init__(
        self, conn: psycopg.Connection[Any], conninfo: str, bound: float | None = None, size_limit_mb: int | None = None
    ) -> None:
        self.pgconn = conn.pgconn
        self.pid = conn.info.backend_pid
        self.admin = _ADMINS.get(_server(conninfo))
        self.bound = STATEMENT_TIMEOUT_S if bound is None else bound
        self.deadline = time.monotonic() + self.bound
        self.stage = 0  # 0 running, 1 cancelled, 2 terminated
        self.reason = "time"
        self.size_limit_mb = BRANCH_SIZE_LIMIT_MB if size_limit_mb is None else size_limit_mb
        self.database = conn.info.dbname
        self.size = self._own_size(conn) if self.size_limit_mb > 0 and self.admin is not None else None
        over = self.size is not None and self.size > self._limit_bytes()
        self.interval = OVER_POLL_S if over else FIRST_POLL_S
        self.next_poll = time.monotonic() + self.interval
        self.last_reading: tuple[float, int] | None = None if self.size is None else (time.monotonic(), self.size)
        self._poller: psycopg.Connection[Any] | None = None

    def _limit_bytes(self) -> int:
        return self.size_limit_mb * 1024 * 1024

    @staticmethod
    def _own_size(conn: psycopg.Connection[Any]) -> int | None:
        """The database's size as the call starts, read on the call's own connection (before its SQL)."""
        try:
            row = conn.execute(SIZE_PROBE).fetchone()
        except psycopg.Error:
            return None  # the bound then starts at the first reading
        return int(row[0]) if row and row[0] is not None else None

    @property
    def fired(self) -> bool:
        return self.stage > 0

    def error(self) -> Bound:
        if self.reason == "size":
            return SizeLimitExceeded(
                f"{size_limit_message(self.size_limit_mb)} (localneon ended the statement: "
                "LOCALNEON_BRANCH_SIZE_LIMIT_MB)"
            )
        return BoundExceeded(
            f"statement ran longer than localneon's {self.bound:g} s bound (LOCALNEON_STATEMENT_TIMEOUT) and was ended"
        )

    def wait(self, *, write: bool = False) -> None:
        """Wait until the socket is ready, the deadline passes (then take the next step) or the
        database's size is due to be read."""
        self.tick()
        now = time.monotonic()
        remaining = self.deadline - now
        if remaining <= 0:
            self._escalate()
            return
        if self.stage == 0 and self.size_limit_mb > 0 and self.admin is not None:
            remaining = min(remaining, max(0.0, self.next_poll - now))
        sock = self.pgconn.socket
        select.select([] if write else [sock], [sock] if write else [], [], remaining)

    def tick(self) -> None:
        """Read the database's size when it is due; a call that grew it past the limit is ended.

        Past the limit means over ``BRANCH_SIZE_LIMIT_MB`` for a call that started under it, and
        more than ``SIZE_SLACK_BYTES`` over its own start for one that started over it (so its
        reads and deletes still run, while a visibility map or autovacuum adds a page)."""
        if self.stage or self.size_limit_mb <= 0 or self.admin is None or time.monotonic() < self.next_poll:
            return
        size = self._read_size()
        limit = self._limit_bytes()
        threshold = limit if self.size is None or self.size <= limit else self.size + SIZE_SLACK_BYTES
        watched = self.size is not None and self.size > limit
        now = time.monotonic()
        if watched or (size or 0) > limit:
            self.interval = OVER_POLL_S
        elif size is not None:
            self.interval = next_interval(self.interval, self.last_reading, (now, size), threshold)
        self.next_poll = now + self.interval
        if size is None:
            return
        self.last_reading = (now, size)
        if size > threshold:
            self.reason = "size"
            self.deadline = time.monotonic()
            self._escalate()
        elif self.size is None:
            self.size = size

    def _read_size(self) -> int | None:
        try:
            if self._poller is None:
                assert self.admin is not None
                self._poller = psycopg.connect(self.admin, autocommit=True, connect_timeout=5)
            row = self._poller.execute("SELECT pg_catalog.pg_database_size(%s)", (self.database,)).fetchone()
        except psycopg.Error:
            return None
        return int(row[0]) if row and row[0] is not None else None

    def close(self) -> None:
        """Close the connection the size readings used (if any)."""
        if self._poller is not None:
            with contextlib.suppress(psycopg.Error):
                self._poller.close()
            self._poller = None

    def _escalate(self) -> None:
        self.deadline = time.monotonic() + GRACE_S
        if self.stage == 0:
            self.stage = 1
            with contextlib.suppress(psycopg.Error):
                self.pgconn.get_cancel().cancel()
        elif self.stage == 1 and self.admin is not None:
            self.stage = 2
            with contextlib.suppress(psycopg.Error), psycopg.connect(self.admin, autocommit=True) as admin:
                admin.execute("SELECT pg_catalog.pg_terminate_backend(%s)", (self.pid,))
        else:  # ended and still not answering (or no superuser to ask): the caller closes the socket
            raise self.error()


def send(pgconn: pq.abc.PGconn, dog: Watchdog, text: bytes, params: list[bytes | None] | None = None) -> None:
    """Send one text in single-row mode: the simple protocol (several statements allowed) unless
    ``params`` is given, then the extended protocol (one statement, as Neon's driver sends it)."""
    if params is None:
        pgconn.send_query(text)
    else:
        pgconn.send_query_params(text, params)
    pgconn.set_single_row_mode()
    while pgconn.flush():
        dog.wait(write=True)


def results(pgconn: pq.abc.PGconn, dog: Watchdog) -> Iterator[pq.abc.PGresult]:
    """Each result of the text sent, as it arrives (a row at a time). COPY is refused: COPY FROM
    STDIN is failed at once and COPY TO STDOUT's data dropped, so neither waits on a client."""
    while True:
        # Read only when no whole message is buffered: libpq moves its unread buffer on every read,
        # so reading after each row made a large result quadratic.
        while pgconn.is_busy():
            dog.wait()
            pgconn.consume_input()
        dog.tick()  # rows that stream in without a wait still see the size bound
        result = pgconn.get_result()
        if result is None:
            return
        if result.status == pq.ExecStatus.COPY_IN:
            pgconn.put_copy_end(b"COPY FROM STDIN is not available here: use INSERT")
            while pgconn.flush():
                dog.wait(write=True)
        elif result.status == pq.ExecStatus.COPY_OUT:
            while (got := pgconn.get_copy_data(1))[0] >= 0:
                if got[0] == 0:
                    dog.wait()
                    pgconn.consume_input()
        yield result


def is_copy(result: pq.abc.PGresult) -> bool:
    return result.status in _COPY


def next_interval(interval: float, last: tuple[float, int] | None, now: tuple[float, int], threshold: int) -> float:
    """The wait before the next size reading: at most twice the last wait and SIZE_POLL_S, and, while
    the database grows, at most half the time the growth since `last` (time, bytes) would take to fill
    what is left under `threshold`; never under MIN_POLL_S. The doubling matters: a table's first
    kilobytes say nothing of the rate its next second brings."""
    longest = min(SIZE_POLL_S, interval * 2)
    if last is None or now[0] <= last[0] or now[1] <= last[1]:
        return longest
    rate = (now[1] - last[1]) / (now[0] - last[0])
    left = max(0, threshold - now[1])
    return max(MIN_POLL_S, min(longest, left / rate / 2))
