"""The one place the harness reads the wall clock, so every date-dependent decision can be given a fixed one.

Why: end-of-life dates, run ids, branch TTLs, the janitor's age cutoff and HTTP-date `Retry-After`
values all depend on "now"; a test that let them read the wall clock passed until a given day and
then failed on every machine. Each of them takes a `Clock` (default `system_clock`); tests pass
`fixed(...)`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def fixed(moment: datetime) -> Clock:
    """A clock that always answers `moment` (naive values are taken as UTC)."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return lambda: aware
