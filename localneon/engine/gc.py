"""Find and drop databases and roles of localneon's making that the catalog does not list.

They are what a killed process leaves: a branch database cloned but never recorded, a project
role whose project row is gone. Branch databases are named ``ln_<10 chars>_<name>``; project
roles carry the comment ``localneon project <id>`` (older ones only the default name
``neondb_owner_<6 chars>``). Creating work holds a shared advisory lock (``locks.GC_LOCK``)
from its first physical object to its catalog rows; collecting takes it exclusively, so what is
being created right now is never mistaken for an orphan.

    python -m localneon.gc [--dry-run] [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import psycopg

from localneon.cluster.locks import ROLE_COMMENT_PREFIX, collecting
from localneon.engine import guards
from localneon.engine.branching import Neon

DATABASE_PATTERN = r"^ln_[a-z0-9]{10}_"
LEGACY_ROLE_PATTERN = r"^neondb_owner_[a-z0-9]{6}$"


@dataclass
class Orphans:
    """Names found (and, unless a dry run, dropped), and what could not be dropped and why."""

    databases: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.databases or self.roles)


def _find(neon: Neon, admin: psycopg.Connection[tuple[object, ...]]) -> Orphans:
    with psycopg.connect(neon.catalog.conninfo) as cat:
        known_dbs = {row[0] for row in cat.execute("SELECT pg_name FROM databases")}
        projects = cat.execute("SELECT id, role_name FROM projects").fetchall()
    # A live project's read-only companion carries the same comment as its role: not an orphan.
    known_roles = {str(name) for _, name in projects} | {guards.readonly_role(str(pid)) for pid, _ in projects}
    databases = [
        str(row[0])
        for row in admin.execute(
            "SELECT datname FROM pg_database WHERE datname ~ %s ORDER BY datname", (DATABASE_PATTERN,)
        )
        if row[0] not in known_dbs
    ]
    roles = [
        str(row[0])
        for row in admin.execute(
            "SELECT r.rolname FROM pg_roles r "
            "LEFT JOIN pg_shdescription d ON d.objoid = r.oid AND d.classoid = 'pg_authid'::regclass "
            "WHERE NOT r.rolsuper AND (d.description LIKE %s OR (d.description IS NULL AND r.rolname ~ %s)) "
            "ORDER BY r.rolname",
            (ROLE_COMMENT_PREFIX + "%", LEGACY_ROLE_PATTERN),
        )
        if row[0] not in known_roles
    ]
    return Orphans(databases, roles)


def collect(neon: Neon, *, dry_run: bool = False) -> Orphans:
    """Drop (or, with ``dry_run``, only list) the orphans; waits for creations in flight to finish."""
    with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin, collecting(admin):
        found = _find(neon, admin)
        if dry_run:
            return found
        drops: list[tuple[str, Callable[[], object]]] = [
            (name, functools.partial(guards.drop_database, admin, name)) for name in found.databases
        ]
        drops += [
            (name, functools.partial(guards.drop_role, admin, neon.cluster.conninfo, name)) for name in found.roles
        ]
        for name, drop in drops:  # databases first: a role is dropped once nothing it owns is left
            try:
                drop()
            except psycopg.Error as exc:
                found.failed[name] = str(exc).strip()
        return found


def collect_and_report(neon: Neon) -> None:
    """Collect, saying on stderr what was dropped; what a server does when it starts and stops.

    Housekeeping only: a server that cannot collect still serves, and says why."""
    try:
        found = collect(neon)
    except Exception as exc:
        print(f"localneon: could not collect orphaned databases and roles: {exc}", file=sys.stderr, flush=True)
        return
    if found:
        names = ", ".join([*found.databases, *found.roles])
        print(f"localneon: dropped orphaned databases and roles: {names}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localneon.gc", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="list the orphans, drop nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    args = parser.parse_args(argv)
    found = collect(Neon.open(), dry_run=args.dry_run)
    if args.json:
        print(json.dumps({"dry_run": args.dry_run, **asdict(found)}))
    else:
        verb = "would drop" if args.dry_run else "dropped"
        for kind, names in (("database", found.databases), ("role", found.roles)):
            for name in names:
                status = f"failed: {found.failed[name]}" if name in found.failed else verb
                print(f"{kind} {name}: {status}")
        if not found:
            print("no orphaned databases or roles")
    return 1 if found.failed else 0
