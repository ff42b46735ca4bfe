"""Who spent a batch's CPU: the harness, the local server, PostgreSQL, or the rest of the machine.

Why: the concurrency speedup is bounded by the CPU a trial costs, and that CPU is spent in three
processes the bench can name. Knowing which one dominates says where a faster trial must come from.
Read from /proc (Linux); elsewhere the split is empty and the bench prints only the machine total.

- harness: this process (`os.times`, its own threads included);
- server: the local server process and the children it waited for (each `pg_dump`);
- postgres: the postmaster, the backends alive now and those it has reaped (connections that closed);
- other: the machine's busy time minus the three (the bench's own clients' kernel work, other load).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle so far (/proc/stat)."""
    with open("/proc/stat") as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / _TICK


def _stat(pid: int) -> list[str]:
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rsplit(")", 1)[1].split()


def _seconds(fields: list[str], *, reaped_children: bool) -> float:
    """utime + stime, plus those of the children waited for when asked. fields[0] is the state
    (field 3 of proc(5)), so utime is fields[11] and cutime fields[13]."""
    ticks = int(fields[11]) + int(fields[12])
    if reaped_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / _TICK


def process_seconds(pid: int, *, reaped_children: bool) -> float:
    """The CPU seconds of `pid`, with those of the children it has waited for when asked."""
    return _seconds(_stat(pid), reaped_children=reaped_children)


def postgres_seconds(postmaster: int) -> float:
    """The postmaster, its reaped backends, and the live ones (a pooled connection is not reaped yet)."""
    total = process_seconds(postmaster, reaped_children=True)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(int(entry.name))
            if int(fields[1]) == postmaster:
                total += _seconds(fields, reaped_children=False)
        except (OSError, ValueError, IndexError):
            continue
    return total


def postmaster_of(pgdata: Path) -> int | None:
    """The postmaster's pid from `<pgdata>/postmaster.pid`, if it runs."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        _stat(pid)
    except (OSError, ValueError):
        return None
    return pid


def _unless_gone(read: Callable[[int], float], pid: int | None) -> float | None:
    try:
        return read(pid) if pid else None
    except OSError:
        return None


@dataclass
class CpuSplit:
    """Cumulative CPU seconds at one moment; subtract two to get a batch's share."""

    machine: float
    harness: float
    server: float | None
    postgres: float | None

    @classmethod
    def now(cls, server_pid: int | None, postmaster: int | None) -> CpuSplit:
        """The totals now; a process that is gone (or was never named) has none."""
        times = os.times()
        server = _unless_gone(lambda pid: process_seconds(pid, reaped_children=True), server_pid)
        postgres = _unless_gone(postgres_seconds, postmaster)
        return cls(machine_busy_seconds(), times.user + times.system, server, postgres)

    def since(self, earlier: CpuSplit, trials: int) -> dict[str, float]:
        """CPU seconds per trial by who spent them between `earlier` and this moment."""
        parts: dict[str, float] = {"harness": self.harness - earlier.harness}
        if self.server is not None and earlier.server is not None:
            parts["server"] = self.server - earlier.server
        if self.postgres is not None and earlier.postgres is not None:
            parts["postgres"] = self.postgres - earlier.postgres
        parts["other"] = max(0.0, (self.machine - earlier.machine) - sum(parts.values()))
        return {name: value / max(1, trials) for name, value in parts.items()}


def describe(split: dict[str, float]) -> str:
    """`harness 0.21 + server 0.30 + postgres 0.35 + other 0.04` (CPU-s per trial, with shares)."""
    total = sum(split.values()) or 1.0
    return " + ".join(f"{name} {value:.2f} ({value / total:.0%})" for name, value in split.items())
