"""Whose failure a failed state capture is: the model's, or the infrastructure's.

After the harness has ended the trial's sessions and pinned every setting at connection start
(`state.py`), what can still stop a capture is either something the model left behind (a connection
limit of 0 on its database or role, a database closed to connections, a changed password, a policy
forcing row security, an object whose output fails) or trouble outside the model's reach (the server
down or refusing clients, a full disk, no memory). The first is the model's failure, scored as damage;
only the second is `infra_error`. The message names the cause in words ("the disk is full").
"""

from __future__ import annotations

from typing import Literal

import psycopg

Fault = Literal["model", "infrastructure"]

# Outside the model's reach, whatever else the message says (checked first: a full disk may surface
# as an error of any class). (text in the message, the cause in words)
_INFRASTRUCTURE_TEXT = (
    ("no space left on device", "the database server's disk is full"),
    ("disk full", "the database server's disk is full"),
    ("out of memory", "the database server is out of memory"),
    ("sorry, too many clients already", "the database server has no connection slots left (max_connections)"),
    ("the database system is shutting down", "the database server is shutting down"),
    ("the database system is starting up", "the database server is starting up"),
    ("the database system is in recovery mode", "the database server is recovering from a crash"),
    ("connection refused", "nothing listens at the database address (the server is down)"),
    ("no such file or directory", "the database server's socket is missing (the server is down)"),
    ("server closed the connection unexpectedly", "the database server closed the connection (did it crash?)"),
)
# What the model can leave on its own role, database or objects that the harness's pinned session
# cannot override.
_MODEL_TEXT = (
    ("too many connections for role", "the model left its role's connection limit too low for the harness"),
    ("too many connections for database", "the model left the database's connection limit too low"),
    ("is not currently accepting connections", "the model closed the database to connections"),
    ("password authentication failed", "the model changed its role's password"),
    ("is not permitted to log in", "the model took its role's LOGIN away"),
    ("row-level security", "the model forced a row security policy on a table"),
    ("canceling statement due to lock timeout", "a lock the model's objects hold blocked the capture"),
    ("canceling statement due to statement timeout", "the capture ran out of time on what the model left"),
)
# Bounds a server puts on what one query may take, which a capture meets only because of what the
# model left (a table whose rows need more temporary files or memory to fingerprint than one query
# may have, a branch it filled to its size limit), checked before the infrastructure's SQLSTATE
# class 53. (SQLSTATE, text in the message, the cause in words)
_MODEL_BOUNDS = (
    ("53400", "temp_file_limit", "the model left tables too large to read within the server's temp-file limit"),
    ("53200", "out of memory", "the model left a row too large to read within the server's memory for one query"),
    ("53100", "project size limit", "the model filled the branch past its project size limit"),
)
# SQLSTATE classes a fixed, read-only capture query meets only through objects the model made:
# data exceptions (22), access rules and names (42), PL/pgSQL raises (P0), lock waits (55P03).
_MODEL_SQLSTATE_PREFIXES = ("22", "42", "P0", "55P03", "57014", "28")
_INFRASTRUCTURE_SQLSTATE_PREFIXES = ("08", "53", "57P", "58", "XX")


def classify(error: BaseException) -> tuple[Fault, str]:
    """(whose fault, the reason in words with the error's own text)."""
    detail = f"{type(error).__name__}: {error}".strip()
    text = detail.lower()
    state = getattr(error, "sqlstate", None) if isinstance(error, psycopg.Error) else None
    for code, needle, cause in _MODEL_BOUNDS:
        # "out of memory" exactly: "out of shared memory" (the lock table, shared by every session) is not the model's.
        if state == code and needle in text and "shared memory" not in text:
            return "model", f"{cause} ({detail})"
    for needle, cause in _INFRASTRUCTURE_TEXT:
        if needle in text:
            return "infrastructure", f"{cause} ({detail})"
    sqlstate = getattr(error, "sqlstate", None) if isinstance(error, psycopg.Error) else None
    if sqlstate and sqlstate.startswith(_INFRASTRUCTURE_SQLSTATE_PREFIXES) and not sqlstate.startswith("53300"):
        return "infrastructure", detail
    for needle, cause in _MODEL_TEXT:
        if needle in text:
            return "model", f"{cause} ({detail})"
    if sqlstate and sqlstate.startswith(_MODEL_SQLSTATE_PREFIXES):
        return "model", f"what the model left on the branch broke the capture ({detail})"
    return "infrastructure", detail
