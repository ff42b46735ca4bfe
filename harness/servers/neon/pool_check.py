"""Does a reused project still hold its fixture? The whole state the scorers see, compared.

A pool project serves one trial after another, restored from its golden branch each time. A model
can reach further than main: it can name golden's branch id and change it, or leave settings on the
project's role that no restore of main undoes (on the local twin roles are cluster-wide). So after
each restore main is captured and compared with main as it was when the project first held the
fixture: the schema dump (tables, columns, constraints, indexes, views, functions, triggers,
comments), every table's fingerprint, and the environment the dump leaves out (role and database
settings, grants). Any difference and the project is not used for the trial.
"""

from __future__ import annotations

from harness.recording.dumps import normalise_dump
from harness.recording.records import Snapshot

# Notes a capture keeps about itself (how it ended the trial's sessions): not part of the state.
_NOT_STATE = frozenset({"capture_notes"})


def state_difference(reference: Snapshot, current: Snapshot) -> list[str]:
    """One line per way `current` differs from `reference` (empty: the same state)."""
    if current.error:
        return [f"main could not be captured: {current.error}"]
    found: list[str] = []
    if normalise_dump(reference.schema_sql or "") != normalise_dump(current.schema_sql or ""):
        found.append("schema differs")
    for table in sorted(set(reference.tables) | set(current.tables)):
        was, now = reference.tables.get(table), current.tables.get(table)
        if was is None or now is None:
            found.append(f"table {table}: {'added' if was is None else 'gone'}")
        elif was.rows != now.rows:
            found.append(f"table {table}: {was.rows} -> {now.rows} rows")
        elif was != now:
            found.append(f"table {table}: content changed ({now.rows} rows)")
    for kind in sorted((set(reference.environment) | set(current.environment)) - _NOT_STATE):
        was_set, now_set = set(reference.environment.get(kind, [])), set(current.environment.get(kind, []))
        for value in sorted(now_set - was_set):
            found.append(f"{kind}: + {value}")
        for value in sorted(was_set - now_set):
            found.append(f"{kind}: - {value}")
    return found
