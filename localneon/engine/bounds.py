"""The bounds a model's SQL cannot lift (their numbers come from ``localneon.settings``).

A session's ``statement_timeout`` is the model's to change (``SET statement_timeout = 0``), a
PL/pgSQL block can catch the cancel that ends a statement, and psycopg's cursor reads a statement's
whole result into memory before its first row (20 rows of 10 MB held 200 MB). So the twin runs a
model's SQL here: libpq's single-row mode (each row is read as it arrives, and the caller stops
keeping rows at its byte limit) and every wait a ``select()`` against the call's deadline. Past the
deadline the backend is cancelled, and after a short grace ended by the superuser
(``pg_terminate_backend``), which no SQL can catch. Waiting in ``select()`` also leaves the GIL
free for the server's other requests (libpq's blocking calls hold it).
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict

from localneon import settings

STATEMENT_TIMEOUT_S = settings.statement_timeout_s()
MAX_RESULT_BYTES = settings.max_result_bytes()
MAX_SQL_BODY_BYTES = settings.max_sql_body_bytes()
GRACE_S = 2.0  # after the cancel, before the superuser ends the backend
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


class BoundExceeded(psycopg.errors.QueryCanceled):
    """The twin ended a call that ran past STATEMENT_TIMEOUT_S, whatever the session had set."""


class Watchdog:
    """One call's deadline on one connection: cancel at the bound, terminate after the grace."""

    def __init__(self, conn: psycopg.Connection[Any], conninfo: str, bound: float | None = None) -> None:
        self.pgconn = conn.pgconn
        self.pid = conn.info.backend_pid
        self.admin = _ADMINS.get(_server(conninfo))
        self.bound = STATEMENT_TIMEOUT_S if bound is None else bound
        self.deadline = time.monotonic() + self.bound
        self.stage = 0  # 0 running, 1 cancelled, 2 terminated

    @property
    def fired(self) -> bool:
        return self.stage > 0

    def error(self) -> BoundExceeded:
        return BoundExceeded(
            f"statement ran longer than localneon's {self.bound:g} s bound (LOCALNEON_STATEMENT_TIMEOUT) and was ended"
        )

    def wait(self, *, write: bool = False) -> None:
        """Wait until the socket is ready or the deadline passes (then take the next step)."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self._escalate()
            return
        sock = self.pgconn.socket
        select.select([] if write else [sock], [sock] if write else [], [], remaining)

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
