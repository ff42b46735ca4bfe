"""What a project's role may set on its own database and role, undone; and its read-only companion.

The model under test runs SQL as the project's role, which owns every branch database. An owner may
`ALTER DATABASE ... IS_TEMPLATE true` (DROP DATABASE then refuses), `ALLOW_CONNECTIONS false`,
`CONNECTION LIMIT 0`, and a role may set its own defaults (`ALTER ROLE current_user SET ...`) and
password. On Neon a project's databases and roles live in its branches: deleting the project removes
them whatever their flags, and restoring a branch brings its roles back as they were. Here databases
and roles are the cluster's, so the twin undoes these itself: before every drop, and on every restore.

Read-only grants: a transaction the SQL text can end (`COMMIT; CREATE TABLE ...`) or lift (`SET
transaction_read_only = off` before its first query) is no bound by itself. SQL under a read-only
grant runs as a companion role, a member of the project's role that inherits its privileges (it
reads what the owner reads, and nothing more: `pg_read_all_data` would let it read every catalog
of the cluster, `pg_authid` included) but may not become it, so the login rule (`isolation.py`)
admits it to the project's databases only. Its statements run one at a time in a READ ONLY
transaction that has read a snapshot before the first of them (so its mode can no longer be
changed), and a statement that ends it (`COMMIT`, `ROLLBACK`, `COMMIT AND CHAIN`) finds another
READ ONLY one begun the same way before the next statement runs (`keep_read_only`).

The companion's name is a digest of the project's id: roles are the cluster's, and PostgreSQL
prints any role's name for its oid to anyone (`oid::regrole`), so no role name may carry a project.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import pq, sql

from localneon.cluster.locks import ROLE_COMMENT_PREFIX
from localneon.engine import bounds

# A READ ONLY transaction and a first query in it: its mode is fixed from then on ("transaction
# read-write mode must be set before any query").
READ_ONLY_BEGIN = "BEGIN READ ONLY; SELECT 1"
_SNAPSHOT = "SELECT 1"
_ENDS = ("COMMIT", "ROLLBACK")  # the command tags of COMMIT/END/ABORT/ROLLBACK [AND CHAIN]


def drop_database(admin: psycopg.Connection[Any], name: str) -> None:
    """DROP DATABASE ... WITH (FORCE), after undoing what its owner could set to stop it."""
    exists = admin.execute("SELECT 1 FROM pg_catalog.pg_database WHERE datname = %s", (name,)).fetchone()
    if exists is None:
        return
    admin.execute(
        sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE false ALLOW_CONNECTIONS true CONNECTION LIMIT -1").format(
            sql.Identifier(name)
        )
    )
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def drop_role(admin: psycopg.Connection[Any], conninfo: Callable[[str], str], role: str) -> None:
    """DROP ROLE, after ``DROP OWNED BY`` in every database that still names it: another project's
    role may have granted it privileges there (``GRANT SELECT ON t TO <this role>``), and DROP ROLE
    refuses while any remain. ``conninfo(dbname)`` reaches a database as the superuser."""
    name = sql.Identifier(role)
    where = admin.execute(
        "SELECT DISTINCT d.datname FROM pg_catalog.pg_shdepend s JOIN pg_catalog.pg_database d ON d.oid = s.dbid "
        "WHERE s.refclassid = 'pg_catalog.pg_authid'::regclass AND s.refobjid = "
        "(SELECT oid FROM pg_catalog.pg_roles WHERE rolname = %s) "
        "AND d.datname NOT IN (pg_catalog.current_database(), 'template0')",
        (role,),
    ).fetchall()
    if admin.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
        return
    for (database,) in where:
        admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(sql.Identifier(database)))
        with psycopg.connect(conninfo(database), autocommit=True) as there:
            there.execute(sql.SQL("DROP OWNED BY {}").format(name))
    admin.execute(sql.SQL("DROP OWNED BY {}").format(name))  # here, and its privileges on shared objects
    admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(name))


def reset_role(
    admin: psycopg.Connection[Any],
    role: str,
    password: str | None,
    search_path: str,
    keep: tuple[str, ...] = (),
    rls: str = "NOBYPASSRLS",
) -> None:
    """The role as the twin made it: no defaults but its search path, its own password, no limit, no
    memberships it gained (a role restored with its branch, as on Neon)."""
    name = sql.Identifier(role)
    admin.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(name))
    admin.execute(sql.SQL("ALTER ROLE {} SET search_path = " + search_path).format(name))
    bounds.hold_on_role(admin, role)
    attributes = f"LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION {rls} CONNECTION LIMIT -1"
    admin.execute(sql.SQL(f"ALTER ROLE {{}} {attributes} VALID UNTIL 'infinity'").format(name))
    if password is not None:
        admin.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(name, sql.Literal(password)))
    granted = admin.execute(
        "SELECT r.rolname FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles r ON r.oid = m.roleid "
        "JOIN pg_catalog.pg_roles u ON u.oid = m.member WHERE u.rolname = %s AND r.rolname <> ALL(%s)",
        (role, list(keep)),
    ).fetchall()
    for (group,) in granted:
        admin.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(group), name))


def readonly_role(project_id: str) -> str:
    """The read-only companion's name: derived from the project (so nothing more is stored), and
    naming nothing of it (see the module's note)."""
    return "ln_ro_" + hashlib.sha256(f"localneon read-only {project_id}".encode()).hexdigest()[:24]


def legacy_readonly_role(project_id: str) -> str:
    """The name an older localneon gave the companion (it named the project), dropped with the project."""
    return f"ln_ro_{project_id}"[:63]


def keep_read_only(pgconn: pq.abc.PGconn, commands: list[str], run: Callable[[str], object], begin: str) -> None:
    """After a statement of a read-only call: if it ended the transaction, begin another (``begin``:
    a READ ONLY one with a first query, ``READ_ONLY_BEGIN``'s way); if it chained one (``COMMIT AND
    CHAIN`` keeps READ ONLY, but a new transaction has not read yet), read in it at once."""
    if pgconn.transaction_status == pq.TransactionStatus.IDLE:
        run(begin)
    elif any(command.split(" ", 1)[0] in _ENDS for command in commands):
        run(_SNAPSHOT)


def readonly_password(project_password: str) -> str:
    """The companion's password, derived from the project's (it reaches nothing the project's role
    cannot), so a server reached over TCP (an external ``DATABASE_URL``) lets it log in too."""
    return "npg_ro_" + hmac.new(project_password.encode(), b"localneon read-only", "sha256").hexdigest()[:24]


def ensure_readonly_role(
    admin: psycopg.Connection[Any], project_id: str, owner: str, password: str, search_path: str
) -> str | None:
    """The project's read-only role, created on first use; None on a server older than 16, which
    has no membership without SET (the READ ONLY transaction is then the only bound)."""
    if admin.info.server_version < 160000:
        return None
    role = readonly_role(project_id)
    if admin.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone() is not None:
        return role
    name = sql.Identifier(role)
    try:
        with admin.transaction():  # all of it or none: a concurrent creator waits, then finds it whole
            # BYPASSRLS: the owner it stands in for reads its own tables past row security.
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN BYPASSRLS PASSWORD {}").format(name, sql.Literal(password)))
            comment = sql.Literal(ROLE_COMMENT_PREFIX + project_id)
            admin.execute(sql.SQL("COMMENT ON ROLE {} IS {}").format(name, comment))
            # A member (the login rule admits it) that reads what the owner reads and cannot SET ROLE to it.
            owner_name = sql.Identifier(owner)
            admin.execute(sql.SQL("GRANT {} TO {} WITH INHERIT TRUE, SET FALSE").format(owner_name, name))
            admin.execute(sql.SQL("ALTER ROLE {} SET search_path = " + search_path).format(name))
            bounds.hold_on_role(admin, role)
    except (psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
        pass  # another process made it a moment ago
    return role


def grant_connect(admin: psycopg.Connection[Any], database: str, role: str) -> None:
    """CONNECT on one branch database (copies inherit it; the owner may have revoked it)."""
    row = admin.execute("SELECT has_database_privilege(%s, %s, 'CONNECT')", (role, database)).fetchone()
    if not (row and row[0]):
        admin.execute(
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), sql.Identifier(role))
        )


def reset_readonly_role(
    admin: psycopg.Connection[Any], project_id: str, owner: str, password: str, search_path: str
) -> None:
    """The companion as made (if it exists): it may have set its own defaults too."""
    role = readonly_role(project_id)
    if admin.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone() is not None:
        reset_role(admin, role, password, search_path, keep=(owner,), rls="BYPASSRLS")


def drop_readonly_role(admin: psycopg.Connection[Any], conninfo: Callable[[str], str], project_id: str) -> None:
    drop_role(admin, conninfo, readonly_role(project_id))
    drop_role(admin, conninfo, legacy_readonly_role(project_id))


def close_shared_databases(admin: psycopg.Connection[Any]) -> None:
    """`postgres` and `template1` list every project's databases and roles: no project role connects
    there (the superuser still does, and CREATE DATABASE still copies template1)."""
    for name in ("postgres", "template1"):
        admin.execute(sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name)))
