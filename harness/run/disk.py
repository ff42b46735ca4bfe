"""Whether the local server's PostgreSQL has run out of disk, said in words on a failed trial.

A full disk under the embedded cluster does not always say so: PostgreSQL's first failed write of
WAL is a PANIC, the server restarts into crash recovery, which needs the disk too, and every later
connection meets `server closed the connection unexpectedly` or `the database system is in
recovery mode`. So when a trial on the local server ends as `infra_error`, the harness looks at
the filesystem holding the cluster's data directory (where the run put it, `LOCALNEON_PGDATA`),
and a disk with less than `FULL_BELOW` bytes free names the cause before PostgreSQL's own words.
A `DATABASE_URL` server's disk is not the harness's to look at; its errors keep their own text.
"""

from __future__ import annotations

import shutil
from pathlib import Path

# Less than this free is full for PostgreSQL: a WAL segment alone is 16 MB, and a checkpoint, a
# new branch (a copy of a database) or a sort's temporary files need more.
FULL_BELOW = 64 * 1024 * 1024
FULL_DISK = "the database server's disk is full"


def full_disk(pgdata: Path) -> str | None:
    """`the database server's disk is full (<where>: N MB free of M MB)` when the filesystem holding
    `pgdata` (or its nearest existing parent) has less than `FULL_BELOW` free; else None."""
    where = pgdata
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        usage = shutil.disk_usage(where)
    except OSError:
        return None
    if usage.free >= FULL_BELOW:
        return None
    mb = 1024 * 1024
    return f"{FULL_DISK} ({pgdata}: {usage.free / mb:.1f} MB free of {usage.total / mb:.0f} MB)"


def named(error: str | None, pgdata: Path) -> str | None:
    """`error` with the full disk named first, when the disk is full and the error does not say so."""
    cause = full_disk(pgdata)
    if cause is None or (error and FULL_DISK in error):
        return error
    return f"{cause}: {error}" if error else cause
