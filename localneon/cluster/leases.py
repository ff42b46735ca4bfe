"""Who is using an embedded cluster: one lease file per process, beside its data directory.

Why files named after pids: a process that uses the cluster must be counted while it lives and
stop counting when it dies, however it dies (a SIGKILL runs no clean-up). A lease holds its
process's start time, so that a pid the system has given to a new process is not taken for the one
that wrote the lease. `KEPT` is the lease of a cluster started by hand (`python -m localneon.pg
start`): it counts until `python -m localneon.pg stop`. This module only keeps the files; deciding
to stop the cluster, under its lock, is `localneon.cluster.pg`'s.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

KEPT = "kept"


def leases_dir(pgdata: Path) -> Path:
    """`.<data directory name>.leases/`, beside the data directory (which the server's user owns)."""
    return pgdata.parent / f".{pgdata.name}.leases"


def started_at(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, from /proc); "" where there is no /proc,
    None when the process is gone or a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    return None if fields[0] == "Z" else fields[19]


def take(pgdata: Path, pid: int) -> None:
    """Record that process `pid` uses the cluster."""
    folder = leases_dir(pgdata)
    folder.mkdir(exist_ok=True)
    (folder / str(pid)).write_text(started_at(pid) or "", encoding="utf-8")


def keep(pgdata: Path) -> None:
    """The lease of a cluster started by hand: it counts until the cluster is stopped by hand."""
    folder = leases_dir(pgdata)
    folder.mkdir(exist_ok=True)
    (folder / KEPT).touch()


def drop(pgdata: Path, pid: int) -> None:
    (leases_dir(pgdata) / str(pid)).unlink(missing_ok=True)


def drop_all(pgdata: Path) -> None:
    shutil.rmtree(leases_dir(pgdata), ignore_errors=True)


def live(pgdata: Path) -> list[str]:
    """The leases of processes still running (and `KEPT`); dead ones are removed on the way."""
    found: list[str] = []
    for path in sorted(leases_dir(pgdata).glob("*")):
        if path.name == KEPT:
            found.append(path.name)
            continue
        try:
            now, recorded = started_at(int(path.name)), path.read_text(encoding="utf-8").strip()
        except (OSError, ValueError):
            now, recorded = None, ""
        if now is not None and (not recorded or not now or now == recorded):
            found.append(path.name)
        else:
            path.unlink(missing_ok=True)
    return found
