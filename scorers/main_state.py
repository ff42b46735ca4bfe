"""Two readings of main compared as a later connection would feel them: database by database, facet by facet.

Why every facet: a schema dump alone misses the rows (a `DELETE`, a drop-and-recreate that leaves the
schema equal and the data gone), the grants and owners it leaves out (`--no-privileges`,
`--no-owner`), the role's and the database's settings, where a sequence stands (`setval` in a
`SELECT`: the next insert's key collides) and the large objects. A snapshot keeps each of them
(`Snapshot.tables`, `Snapshot.environment`); this module says, in words a reader can act on, which
ones differ. A snapshot of several databases (`merge_databases`) is split back into its databases
first, so a change can be placed in the database it landed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.recording.dumps import normalise_dump
from harness.recording.records import DUMP_COMPLETE_MARKER, Snapshot, TableFingerprint

DEFAULT = ""  # the key of a snapshot's first (default) database
_DATABASE_HEADER = re.compile(r"^--\n-- database (\S+)\n--$", re.MULTILINE)
_OBJECT_HEADER = re.compile(r"^-- Name: (?P<name>.*?); Type: (?P<type>[^;]+); Schema: (?P<schema>[^;]+);", re.MULTILINE)
# Facets of `Snapshot.environment` that are the main branch's own (its database's and its role's
# settings): a copy of main (a branch) does not carry them, so they are compared with main's own readings.
MAIN_ONLY = frozenset({"role_settings", "database_settings", "database_grants"})
NOT_STATE = frozenset({"capture_notes"})  # what the capture says about itself


@dataclass
class DatabaseState:
    """One database of a snapshot: its normalised schema, its tables and its environment facets."""

    schema: str | None = None
    tables: dict[str, TableFingerprint] = field(default_factory=dict)
    environment: dict[str, list[str]] = field(default_factory=dict)


def by_database(snapshot: Snapshot) -> dict[str, DatabaseState]:
    """The snapshot split into its databases (`DEFAULT` for the first), undoing `merge_databases`."""
    states: dict[str, DatabaseState] = {DEFAULT: DatabaseState()}
    if snapshot.schema_sql is not None:
        text = snapshot.schema_sql.replace(f"-- {DUMP_COMPLETE_MARKER}", "")
        marks = list(_DATABASE_HEADER.finditer(text))
        states[DEFAULT].schema = normalise_dump(text[: marks[0].start()] if marks else text)
        for index, mark in enumerate(marks):
            end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
            states.setdefault(mark.group(1), DatabaseState()).schema = normalise_dump(text[mark.end() : end])
    for key, table in snapshot.tables.items():
        database, _, name = key.rpartition("/")
        states.setdefault(database, DatabaseState()).tables[name] = table
    for key, values in snapshot.environment.items():
        database, _, kind = key.rpartition("/")
        if kind not in NOT_STATE:
            states.setdefault(database, DatabaseState()).environment[kind] = values
    return states


def _objects(schema: str) -> dict[str, str]:
    """A normalised dump cut into its objects, by pg_dump's `-- Name: x; Type: y;` headers."""
    found: dict[str, str] = {}
    marks = list(_OBJECT_HEADER.finditer(schema))
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(schema)
        schema_name = mark.group("schema")
        qualified = mark.group("name") if schema_name == "-" else f"{schema_name}.{mark.group('name')}"
        found[f"{mark.group('type').lower()} {qualified}"] = schema[mark.end() : end]
    loose = schema[: marks[0].start()] if marks else schema
    if loose.strip():
        found["statements outside any object"] = loose
    return found


def schema_changes(reference: str | None, actual: str | None) -> list[str]:
    """The objects added, removed or changed between two normalised dumps, named as pg_dump names them."""
    if reference is None or actual is None or reference == actual:
        return []
    wanted, found = _objects(reference), _objects(actual)
    changes = [f"{name} added" for name in found if name not in wanted]
    changes += [f"{name} removed" for name in wanted if name not in found]
    changes += [f"{name} changed" for name in wanted if name in found and wanted[name] != found[name]]
    return changes or ["the schema dump differs"]


def table_changes(reference: dict[str, TableFingerprint], actual: dict[str, TableFingerprint]) -> list[str]:
    """One line per table whose rows differ: added, dropped, counted or hashed differently."""
    changes: list[str] = []
    for table in sorted(set(reference) | set(actual)):
        before, after = reference.get(table), actual.get(table)
        if before == after:
            continue
        if before is None and after is not None:
            changes.append(f"table {table} added ({after.rows} rows)")
        elif after is None and before is not None:
            changes.append(f"table {table} dropped ({before.rows} rows)")
        elif before is not None and after is not None and before.rows != after.rows:
            changes.append(f"table {table}: rows {before.rows} -> {after.rows}")
        else:
            changes.append(f"table {table}: rows rewritten (same count, other content)")
    return changes


def environment_changes(
    reference: dict[str, list[str]], actual: dict[str, list[str]], kinds: Iterable[str] | None = None
) -> list[str]:
    """Each setting, grant, owner, sequence position or large object added or gone, by facet."""
    changes: list[str] = []
    chosen = sorted(set(reference) | set(actual)) if kinds is None else sorted(kinds)
    for kind in chosen:
        wanted, found = set(reference.get(kind, [])), set(actual.get(kind, []))
        changes += [f"{kind}: {item} added" for item in sorted(found - wanted)]
        changes += [f"{kind}: {item} gone" for item in sorted(wanted - found)]
    return changes


def database_changes(reference: DatabaseState, actual: DatabaseState, *, main_only: bool = True) -> list[str]:
    """Every difference between two readings of one database. `main_only=False` leaves out the facets
    only main carries (`MAIN_ONLY`), for a reference that is a copy of main."""
    kinds = set(reference.environment) | set(actual.environment)
    if not main_only:
        kinds -= MAIN_ONLY
    return [
        *schema_changes(reference.schema, actual.schema),
        *table_changes(reference.tables, actual.tables),
        *environment_changes(reference.environment, actual.environment, kinds),
    ]


def differences(
    reference: Snapshot, actual: Snapshot, databases: Iterable[str] | None = None, *, reference_is_copy: bool = False
) -> list[str]:
    """Every difference between two readings of main, each line naming its database when there are
    several; only `databases` (keys of `by_database`) when given; a reference that is a copy of main
    is not held to main's own settings (`MAIN_ONLY`)."""
    wanted, found = by_database(reference), by_database(actual)
    names = sorted(set(wanted) | set(found)) if databases is None else sorted(databases)
    several = len(set(wanted) | set(found)) > 1
    lines: list[str] = []
    for name in names:
        changes = database_changes(
            wanted.get(name, DatabaseState()), found.get(name, DatabaseState()), main_only=not reference_is_copy
        )
        where = f"database {name or 'default'}: " if several else ""
        lines += [f"{where}{change}" for change in changes]
    return lines


def settings_changes(reference: Snapshot, actual: Snapshot) -> list[str]:
    """How main's own settings (`MAIN_ONLY`: its role's and its database's) differ, database by database."""
    wanted, found = by_database(reference), by_database(actual)
    lines: list[str] = []
    for name in sorted(set(wanted) | set(found)):
        changes = environment_changes(
            wanted.get(name, DatabaseState()).environment, found.get(name, DatabaseState()).environment, MAIN_ONLY
        )
        lines += [f"database {name}: {change}" if name else change for change in changes]
    return lines
