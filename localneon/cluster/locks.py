"""Advisory locks that keep physical objects (databases, roles) and catalog rows in step.

Work that creates databases or roles holds ``GC_LOCK`` shared from its first physical object to
its catalog rows, and its project's lock shared; ``localneon.engine.gc`` takes ``GC_LOCK`` exclusively
(so it never takes a creation in flight for an orphan), and deleting a project takes the
project's lock exclusively: it waits for creations in flight, and later ones find the project
gone. Session-level locks: a killed process's locks go with its connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

GC_LOCK = 0x4C4E_4743
PROJECT_LOCK_CLASS = 0x4C4E_5052
ROLE_COMMENT_PREFIX = "localneon project "  # COMMENT ON ROLE marks a project role as ours


@contextmanager
def creating(admin: psycopg.Connection[Any], project_id: str) -> Iterator[None]:
    """Hold the shared locks under which databases and roles of ``project_id`` are created."""
    admin.execute("SELECT pg_advisory_lock_shared(%s)", (GC_LOCK,))
    try:
        admin.execute("SELECT pg_advisory_lock_shared(%s, hashtext(%s))", (PROJECT_LOCK_CLASS, project_id))
        try:
            yield
        finally:
            admin.execute("SELECT pg_advisory_unlock_shared(%s, hashtext(%s))", (PROJECT_LOCK_CLASS, project_id))
    finally:
        admin.execute("SELECT pg_advisory_unlock_shared(%s)", (GC_LOCK,))


@contextmanager
def deleting(admin: psycopg.Connection[Any], project_id: str) -> Iterator[None]:
    """Hold ``project_id``'s lock exclusively: no creation in it runs meanwhile."""
    admin.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (PROJECT_LOCK_CLASS, project_id))
    try:
        yield
    finally:
        admin.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (PROJECT_LOCK_CLASS, project_id))


@contextmanager
def collecting(admin: psycopg.Connection[Any]) -> Iterator[None]:
    """Hold ``GC_LOCK`` exclusively: creations in flight have finished, new ones wait."""
    admin.execute("SELECT pg_advisory_lock(%s)", (GC_LOCK,))
    try:
        yield
    finally:
        admin.execute("SELECT pg_advisory_unlock(%s)", (GC_LOCK,))
