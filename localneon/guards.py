"""What a project's role may set on its own database and role, undone; and its read-only companion.

The model under test runs SQL as the project's role, which owns every branch database. An owner may
`ALTER DATABASE ... IS_TEMPLATE true` (DROP DATABASE then refuses), `ALLOW_CONNECTIONS false`,
`CONNECTION LIMIT 0`, and a role may set its own defaults (`ALTER ROLE current_user SET ...`) and
password. On Neon a project's databases and roles live in its branches: deleting the project removes
them whatever their flags, and restoring a branch brings its roles back as they were. Here databases
and roles are the cluster's, so the twin undoes these itself: before every drop, and on every restore.

Read-only grants: a transaction the SQL text can end (`COMMIT; CREATE TABLE ...`) is no bound. SQL
under a read-only grant runs as a companion role with read privileges only (`pg_read_all_data`), a
member of the project's role that neither inherits its privileges nor may become it, so the login
rule (`isolation.py`) admits it to the project's databases and no text can write.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from localneon.locks import ROLE_COMMENT_PREFIX


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


def reset_role(
    admin: psycopg.Connection[Any], role: str, password: str | None, search_path: str, keep: tuple[str, ...] = ()
) -> None:
    """The role as the twin made it: no defaults but its search path, its own password, no limit, no
    memberships it gained (a role restored with its branch, as on Neon)."""
    name = sql.Identifier(role)
    admin.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(name))
    admin.execute(sql.SQL("ALTER ROLE {} SET search_path = " + search_path).format(name))
    attributes = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT -1"
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
    """The read-only companion's name: derived from the project, so nothing more is stored."""
    return f"ln_ro_{project_id}"[:63]


def ensure_readonly_role(admin: psycopg.Connection[Any], project_id: str, owner: str, search_path: str) -> str:
    """Create the project's read-only role if it is not there yet; its name. It logs in over the
    socket only (no password), as the twin's own SQL tools do."""
    role = readonly_role(project_id)
    if admin.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
        name = sql.Identifier(role)
        try:
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
        except psycopg.errors.DuplicateObject:
            return role  # another process made it a moment ago
        admin.execute(sql.SQL("COMMENT ON ROLE {} IS {}").format(name, sql.Literal(ROLE_COMMENT_PREFIX + project_id)))
        admin.execute(sql.SQL("GRANT pg_read_all_data TO {}").format(name))
        # A member (the login rule admits it) that gets none of the owner's privileges and cannot SET ROLE.
        admin.execute(sql.SQL("GRANT {} TO {} WITH INHERIT FALSE, SET FALSE").format(sql.Identifier(owner), name))
        admin.execute(sql.SQL("ALTER ROLE {} SET search_path = " + search_path).format(name))
    return role


def reset_readonly_role(admin: psycopg.Connection[Any], project_id: str, owner: str, search_path: str) -> None:
    """The companion as made (if it exists): it may have set its own defaults too."""
    role = readonly_role(project_id)
    if admin.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone() is not None:
        reset_role(admin, role, None, search_path, keep=("pg_read_all_data", owner))


def drop_readonly_role(admin: psycopg.Connection[Any], project_id: str) -> None:
    admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(readonly_role(project_id))))


def close_shared_databases(admin: psycopg.Connection[Any]) -> None:
    """`postgres` and `template1` list every project's databases and roles: no project role connects
    there (the superuser still does, and CREATE DATABASE still copies template1)."""
    for name in ("postgres", "template1"):
        admin.execute(sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name)))
