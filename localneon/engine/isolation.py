"""What a project's role sees of the shared cluster: its own databases and roles, never another project's.

All projects live in one PostgreSQL cluster, and ``pg_database``, ``pg_roles`` (and ``pg_user``,
``pg_stat_activity``, ``pg_stat_database``) are cluster-wide: read as any role they list every
project's databases and roles (Neon's ``describe_branch`` lists
``pg_database``, so a model saw other trials' database names). PostgreSQL ignores row security on
system catalogs, so each project database gets a hidden schema ``pg_localneon`` (the ``pg_``
prefix keeps it out of ``pg_dump`` and of every schema listing) holding filtered views of the same
names, and the project role's ``search_path`` puts it before ``pg_catalog``: an unqualified
``pg_database`` shows the branch database connected to (as a Neon branch's server would show its
own), ``pg_roles`` the project's role, and the unfiltered catalogs are closed to it
(a qualified ``pg_catalog.pg_database`` is refused, not leaked).

``pg_stat_statements`` is installed the same way: the extension in ``pg_localneon_stats`` (off the
search path), and a view of this database's own statements in ``pg_localneon``, so a query of
``pg_stat_statements`` and a look at ``pg_extension`` work as on Neon, where the extension is
available to every branch database. Branches are template copies, so they inherit all of it.

The price: ``pg_catalog`` comes after ``public`` on the project role's path, so an object the user
creates in ``public`` under a built-in's name (a table called ``text``) wins over the built-in, as
PostgreSQL documents for such a path; Neon's default path would keep the built-in.

Functions read other sessions too: ``pg_stat_get_activity(NULL)`` and the ``pg_stat_get_backend_*``
family return every backend's role and database oid, ``pg_stat_get_progress_info`` every
database's running vacuums and index builds. They are closed to PUBLIC in each project database
(``_CLOSED_FUNCTIONS``); the filtered ``pg_stat_activity`` reads them through a superuser's
function that returns the calling login's own sessions only, and the built-in views that call them
(``pg_stat_ssl``, ``pg_stat_progress_*``) are refused, not leaked. What stays open is PostgreSQL's
naming of a role by its oid (``oid::regrole``, ``pg_get_userbyid``, an ACL's text), which no
privilege governs and ``pg_tables`` needs: so no role name carries a project (see ``guards``).
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import sql

from localneon.engine import bounds

SCHEMA = "pg_localneon"
STATS_SCHEMA = "pg_localneon_stats"
# Unqualified names resolve here first; new objects still go to "public" (the first schema there).
SEARCH_PATH = f'"$user", public, {SCHEMA}, pg_catalog'

# The current database, if the caller's role owns it. On Neon a branch is its own server, whose
# pg_database lists that branch's databases only; here every branch database is a database of one
# cluster, so the view keeps just the one connected to (a branch has one database here).
_OWN_DATABASE = "datname = pg_catalog.current_database() AND pg_catalog.pg_has_role(datdba, 'MEMBER')"
# The cluster-wide catalogs and statistics views that name databases or roles, each filtered to the
# caller's own.
_VIEWS = {
    "pg_database": f"SELECT * FROM pg_catalog.pg_database WHERE {_OWN_DATABASE}",
    "pg_roles": "SELECT * FROM pg_catalog.pg_roles WHERE pg_catalog.pg_has_role(oid, 'MEMBER')",
    "pg_user": "SELECT * FROM pg_catalog.pg_user WHERE pg_catalog.pg_has_role(usesysid, 'MEMBER')",
    "pg_stat_activity": f"SELECT * FROM {SCHEMA}.activity()",
    "pg_stat_database": f"SELECT * FROM pg_catalog.pg_stat_database WHERE datid IN "
    f"(SELECT oid FROM pg_catalog.pg_database WHERE {_OWN_DATABASE})",
    # Comments on roles and databases (each project role's says "localneon project <id>"), role
    # memberships and per-role settings (another model's ALTER ROLE ... SET) name other projects too.
    "pg_shdescription": "SELECT * FROM pg_catalog.pg_shdescription WHERE CASE classoid "
    "WHEN 'pg_catalog.pg_authid'::pg_catalog.regclass THEN pg_catalog.pg_has_role(objoid, 'MEMBER') "
    f"WHEN 'pg_catalog.pg_database'::pg_catalog.regclass THEN objoid IN "
    f"(SELECT oid FROM pg_catalog.pg_database WHERE {_OWN_DATABASE}) ELSE true END",
    "pg_auth_members": "SELECT * FROM pg_catalog.pg_auth_members WHERE pg_catalog.pg_has_role(member, 'MEMBER')",
    "pg_db_role_setting": "SELECT * FROM pg_catalog.pg_db_role_setting WHERE "
    "(setrole = 0 OR pg_catalog.pg_has_role(setrole, 'MEMBER')) AND (setdatabase = 0 OR setdatabase = "
    "(SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()))",
    # Every role's dependencies in every database (owners, grantees: each project's role), the
    # members of each group (pg_read_all_data's were every companion role), every database's
    # recovery conflicts by name.
    "pg_shdepend": "SELECT * FROM pg_catalog.pg_shdepend WHERE dbid IN (0, "
    "(SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())) AND "
    "(refclassid <> 'pg_catalog.pg_authid'::pg_catalog.regclass OR pg_catalog.pg_has_role(refobjid, 'MEMBER'))",
    "pg_group": "SELECT groname, grosysid, ARRAY(SELECT m FROM pg_catalog.unnest(grolist) AS m "
    "WHERE pg_catalog.pg_has_role(m, 'MEMBER'))::pg_catalog.oid[] AS grolist FROM pg_catalog.pg_group",
    "pg_stat_database_conflicts": "SELECT * FROM pg_catalog.pg_stat_database_conflicts WHERE datid IN "
    f"(SELECT oid FROM pg_catalog.pg_database WHERE {_OWN_DATABASE})",
}
# The sessions of the calling login and of the roles it is a member of (the project role and its
# read-only companion): SECURITY DEFINER, since the functions behind pg_stat_activity are closed to
# PUBLIC, and filtered on session_user, which SQL cannot change (the companion may not SET ROLE).
_ACTIVITY = f"""
CREATE OR REPLACE FUNCTION {SCHEMA}.activity() RETURNS SETOF pg_catalog.pg_stat_activity
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
  SELECT * FROM pg_catalog.pg_stat_activity AS a
   WHERE a.usesysid IS NOT NULL AND pg_catalog.pg_has_role(session_user, a.usesysid, 'MEMBER')
$$
"""
# Functions that read other sessions' roles, databases or work (see the module's note).
_CLOSED_FUNCTIONS = """
SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text FROM pg_catalog.pg_proc AS p
 WHERE p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
   AND (p.proname IN ('pg_stat_get_activity', 'pg_stat_get_progress_info')
        OR p.proname LIKE 'pg\\_stat\\_get\\_backend\\_%')
"""
# What a sealed database's hidden schema says it was sealed with; a copy of a database sealed with
# less (a pool's golden branch from an older localneon) is sealed again when it is made.
SEAL_VERSION = "localneon seal 2"
# This database's statements run by the caller's own roles (the superuser's upkeep is left out).
_STATS_VIEW = (
    f"SELECT * FROM {STATS_SCHEMA}.pg_stat_statements WHERE pg_catalog.pg_has_role(userid, 'MEMBER') "
    "AND dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()) "
    f"AND query <> '{bounds.SIZE_PROBE}'"
)


# Who may log in to a project database: its owner's members (the project role and its read-only
# companion) and superusers. Grants are the owner's to make (`GRANT CONNECT ... TO PUBLIC`), so they
# cannot be the rule; a login event trigger (PostgreSQL 17+) owned by the superuser can, and branches,
# being template copies, inherit it. SECURITY DEFINER: it reads the catalogs closed to the project role.
LOGIN_TRIGGER = "localneon_admit"
_ADMIT = f"""
CREATE OR REPLACE FUNCTION {SCHEMA}.admit() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog AS $$
BEGIN
  IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = session_user)
     AND NOT pg_catalog.pg_has_role(session_user,
       (SELECT d.datdba FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()), 'MEMBER')
  THEN
    RAISE EXCEPTION 'role "%" may not connect to database "%": it belongs to another project',
      session_user, pg_catalog.current_database() USING ERRCODE = '42501';
  END IF;
END $$
"""
# pg_dump lists event triggers; Neon's schema dump of a branch has no such thing, so it is cut out.
_LOGIN_TRIGGER_DUMP = re.compile(
    rf"--\n-- Name: {LOGIN_TRIGGER}; Type: EVENT TRIGGER;[^\n]*\n--\n\nCREATE EVENT TRIGGER {LOGIN_TRIGGER} "
    rf"ON login\n\s*EXECUTE FUNCTION {SCHEMA}\.admit\(\);\n\n\n"
)


def without_login_trigger(dump: str) -> str:
    """A schema dump without the twin's own login rule."""
    return _LOGIN_TRIGGER_DUMP.sub("", dump)


def seal_database(admin_conninfo: str) -> None:
    """Give a project database its filtered catalog views and its login rule (as the superuser).

    Idempotent: a copy of a database sealed before the login rule existed (a pool's golden branch)
    gets what it lacks when it is made (``needs_seal``). A server without the contrib package (an external
    ``DATABASE_URL``) gets no statistics view; only ``list_slow_queries`` needs it, and it says so."""
    schema = sql.Identifier(SCHEMA)
    with psycopg.connect(admin_conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL allow_system_table_mods = on")  # the pg_ prefix is reserved otherwise
        with_stats = bool(
            conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_stat_statements'").fetchone()
        )
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        made = {
            str(row[0])
            for row in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
                (SCHEMA,),
            )
        }
        conn.execute(_ACTIVITY)
        for name, body in _VIEWS.items():
            replace = "CREATE OR REPLACE VIEW" if name in made else "CREATE VIEW"
            conn.execute(sql.SQL(replace + " {}.{} AS ").format(schema, sql.Identifier(name)) + sql.SQL(body))
        if with_stats:
            stats = sql.Identifier(STATS_SCHEMA)
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(stats))
            conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA {}").format(stats))
            conn.execute(
                sql.SQL("CREATE OR REPLACE VIEW {}.pg_stat_statements AS ").format(schema) + sql.SQL(_STATS_VIEW)
            )
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO PUBLIC").format(schema))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO PUBLIC").format(schema))
        closed = sql.SQL(", ").join(sql.Identifier("pg_catalog", name) for name in _VIEWS)
        conn.execute(sql.SQL("REVOKE SELECT ON {} FROM PUBLIC").format(closed))
        functions = [str(row[0]) for row in conn.execute(_CLOSED_FUNCTIONS).fetchall()]
        conn.execute(
            sql.SQL("REVOKE EXECUTE ON FUNCTION {} FROM PUBLIC").format(sql.SQL(", ").join(map(sql.SQL, functions)))
        )
        conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(schema, sql.Literal(SEAL_VERSION)))
        conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(conn.info.dbname)))
        # Login event triggers came with PostgreSQL 17: an older DATABASE_URL server has none, and
        # there only CONNECT grants (which the owner controls) keep other projects out.
        if conn.info.server_version >= 170000:
            conn.execute(_ADMIT)
            if not conn.execute("SELECT 1 FROM pg_event_trigger WHERE evtname = %s", (LOGIN_TRIGGER,)).fetchone():
                conn.execute(
                    sql.SQL("CREATE EVENT TRIGGER {} ON login EXECUTE FUNCTION {}.admit()").format(
                        sql.Identifier(LOGIN_TRIGGER), schema
                    )
                )


def needs_seal(admin: psycopg.Connection[Any], database: str, admin_conninfo: str) -> bool:
    """Whether a fresh copy lacks part of the seal: its template was sealed by an older localneon
    (no login rule, or a hidden schema marked with less than ``SEAL_VERSION``). ``admin_conninfo``
    reaches the copy as the superuser."""
    if admin.info.server_version >= 170000:
        row = admin.execute("SELECT dathasloginevt FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if row is not None and not row[0]:
            return True
    with psycopg.connect(admin_conninfo, autocommit=True) as conn:
        marked = conn.execute(
            "SELECT pg_catalog.obj_description(n.oid, 'pg_namespace') FROM pg_catalog.pg_namespace n "
            "WHERE n.nspname = %s",
            (SCHEMA,),
        ).fetchone()
    return marked is None or marked[0] != SEAL_VERSION


def seal_role(admin: psycopg.Connection[Any], role: str) -> None:
    """Make the project role's unqualified catalog names resolve to the filtered views, and hold
    the temp-file limit on it (``bounds.hold_on_role``)."""
    admin.execute(sql.SQL("ALTER ROLE {} SET search_path = " + SEARCH_PATH).format(sql.Identifier(role)))
    bounds.hold_on_role(admin, role)
