"""The Neon model on one PostgreSQL cluster: projects own roles, branches own physical databases.

A branch's database is a real PostgreSQL database, cloned from its parent's with
``CREATE DATABASE ... TEMPLATE parent STRATEGY FILE_COPY``. Each project has its own login role
(roles are cluster-global, so the name is unique per project); it owns the project's databases,
and CONNECT is revoked from PUBLIC on them, so SQL run as that role cannot reach another
project's data. Administrative work uses the superuser.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from localneon.cluster.locks import ROLE_COMMENT_PREFIX, creating, deleting
from localneon.cluster.pg import Cluster, find_pg_dump, get_cluster, revive, running, server_major
from localneon.engine import bounds, guards, ids, isolation
from localneon.engine.catalog import LOCAL_ORG_ID, Branch, Catalog, Database, Endpoint, Operation, Project
from localneon.engine.errors import BranchNotFound, Conflict, InvalidRequest, LocalNeonError, NotFound

DEFAULT_BRANCH = "main"
DEFAULT_DATABASE = "neondb"
RESTRICT_KEY = "localneon"  # fixed \restrict key, so two dumps of one schema are byte-identical
DUMP_FLAGS = ("--schema-only", "--no-owner", "--no-privileges", f"--restrict-key={RESTRICT_KEY}")
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,62}$")


def _physical_name(database: str) -> str:
    clean = re.sub(r"[^a-z0-9_]", "_", database.lower())[:40]
    return f"ln_{ids.random_alnum(10)}_{clean}"


def role_matches(project: Project, requested: str) -> bool:
    """True for the project's role name, or that name without its per-project suffix."""
    return requested in (project.role_name, project.role_name.rsplit("_", 1)[0])


def _check_name(kind: str, value: str) -> None:
    if not _NAME_RE.match(value):
        raise InvalidRequest(f"invalid {kind} {value!r}: use 1-63 letters, digits, '_', '-' or '.'")


@dataclass
class Created:
    """What creating a project or branch produced, for the API and the tools."""

    project: Project
    branch: Branch
    databases: list[Database]
    endpoints: list[Endpoint]
    operations: list[Operation] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    """A resolved (project, branch, database) triple that SQL can run against."""

    project: Project
    branch: Branch
    database: Database


class Neon:
    """Project and branch operations; every method is synchronous and safe across processes."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.catalog = Catalog(cluster)
        bounds.register_admin(cluster.admin_conninfo)  # the SQL watchdog ends overrunning backends as it

    @classmethod
    def open(cls) -> Neon:
        """Connect to (or start) the cluster and make sure the catalog exists."""
        neon = cls(get_cluster())
        neon.catalog.ensure()
        if neon.cluster.embedded:  # an external DATABASE_URL server's own databases are not ours to close
            with psycopg.connect(neon.cluster.admin_conninfo, autocommit=True) as admin:
                guards.close_shared_databases(admin)
        return neon

    def cluster_running(self) -> bool:
        """False when the embedded PostgreSQL's postmaster is gone (see ``revive_cluster``)."""
        return running(self.cluster)

    def revive_cluster(self) -> bool:
        """Start the embedded PostgreSQL again after it was killed; True when this call started it."""
        started = revive(self.cluster)
        if started:
            print(f"localneon: PostgreSQL on {self.cluster.pgdata} had died; started it again", file=sys.stderr)
        return started

    # Lookups
    def project(self, project_id: str) -> Project:
        project = self.catalog.get_project(project_id)
        if project is None:
            raise NotFound(f"project {project_id!r} not found")
        return project

    def branch(self, project_id: str, branch_id: str | None) -> Branch:
        """A branch by its id, the only way Neon's API names one (a name is no id: ``BranchNotFound``,
        Neon's 404); None means the project's default branch. Where one of Neon's tools looks a name up
        itself (reset_from_parent), the twin's tool does so too (``localneon.mcp.tools.branches``)."""
        self.project(project_id)
        if not branch_id:
            branch = self.catalog.default_branch(project_id)
            if branch is None:
                raise NotFound(f"project {project_id} has no default branch")
            return branch
        branch = self.catalog.get_branch(project_id, branch_id)
        if branch is None:
            raise BranchNotFound()
        return branch

    def database(self, branch: Branch, name: str | None) -> Database:
        name = name or DEFAULT_DATABASE
        for db in self.catalog.databases(branch.id):
            if db.name == name:
                return db
        known = ", ".join(d.name for d in self.catalog.databases(branch.id)) or "none"
        raise NotFound(f"database {name!r} not found on branch {branch.id} (databases: {known})")

    def target(self, project_id: str, branch_id: str | None = None, database: str | None = None) -> Target:
        project = self.project(project_id)
        branch = self.branch(project_id, branch_id)
        return Target(project, branch, self.database(branch, database))

    def role_conninfo(self, target: Target) -> str:
        """Connect as the project's role: what every SQL tool uses."""
        return self.cluster.conninfo(
            target.database.pg_name, user=target.project.role_name, password=target.project.role_password
        )

    def readonly_conninfo(self, target: Target) -> str:
        """Connect as the project's read-only companion (``guards``): what SQL under a read-only grant
        uses, so no SQL text can write (a READ ONLY transaction alone is one ``COMMIT`` away)."""
        password = guards.readonly_password(target.project.role_password)
        with psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin:
            project = target.project
            role = guards.ensure_readonly_role(admin, project.id, project.role_name, password, isolation.SEARCH_PATH)
            if role is None:
                return self.role_conninfo(target)
            guards.grant_connect(admin, target.database.pg_name, role)
        return self.cluster.conninfo(target.database.pg_name, user=role, password=password)

    def admin_conninfo(self, database: Database) -> str:
        return self.cluster.conninfo(database.pg_name)

    def uri(self, target: Target) -> str:
        """The ``postgresql://`` URI a client uses to reach this branch database as the project role."""
        return self.cluster.uri(target.database.pg_name, target.project.role_name, target.project.role_password)

    # Projects
    def create_project(
        self,
        name: str | None = None,
        *,
        branch_name: str | None = None,
        database_name: str | None = None,
        role_name: str | None = None,
        org_id: str | None = None,
    ) -> Created:
        """A project with its default branch, database, role and read-write endpoint."""
        started = datetime.now(UTC)
        branch_name = branch_name or DEFAULT_BRANCH
        database_name = database_name or DEFAULT_DATABASE
        _check_name("branch name", branch_name)
        _check_name("database name", database_name)
        # Roles are cluster-global, so the requested (or default) name gets a per-project suffix;
        # the plain name stays accepted as an alias (see ``role_matches``).
        role = f"{(role_name or database_name + '_owner')[:55]}_{ids.random_alnum(6)}"
        _check_name("role name", role)
        if org_id and org_id != LOCAL_ORG_ID:
            raise NotFound(f"organization {org_id!r} not found (the only local organization is {LOCAL_ORG_ID})")
        password = "npg_" + secrets.token_urlsafe(12).replace("-", "x").replace("_", "y")
        project_id = ids.project_id()
        project = Project(project_id, name or project_id, LOCAL_ORG_ID, role, password, started, started)
        branch = Branch(ids.branch_id(), project_id, branch_name, None, True, started, started, None, None)
        endpoint = Endpoint(ids.endpoint_id(), project_id, branch.id, started, started)
        pg_name = _physical_name(database_name)
        with (
            psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin,
            creating(admin, project_id),
        ):
            try:
                admin.execute(
                    sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOCREATEDB NOCREATEROLE").format(
                        sql.Identifier(role), sql.Literal(password)
                    )
                )
            except psycopg.errors.DuplicateObject as exc:
                raise Conflict(f"role {role!r} already exists") from exc
            try:
                # The comment marks the role as ours, so ``localneon.gc`` can find it if orphaned.
                admin.execute(
                    sql.SQL("COMMENT ON ROLE {} IS {}").format(
                        sql.Identifier(role), sql.Literal(ROLE_COMMENT_PREFIX + project_id)
                    )
                )
                admin.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(pg_name), sql.Identifier(role))
                )
                admin.execute(sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(sql.Identifier(pg_name)))
                isolation.seal_database(self.cluster.conninfo(pg_name))  # branches inherit it as template copies
                isolation.seal_role(admin, role)
                with self.catalog.connect() as conn:
                    self.catalog.insert_project(conn, project)
                    self.catalog.insert_branch(conn, branch)
                    self.catalog.insert_database(conn, branch.id, database_name, pg_name, role)
                    self.catalog.insert_endpoint(conn, endpoint)
                    ops = [
                        self.catalog.record_operation(
                            project_id, "create_timeline", branch_id=branch.id, started=started, conn=conn
                        ),
                        self.catalog.record_operation(
                            project_id,
                            "start_compute",
                            branch_id=branch.id,
                            endpoint_id=endpoint.id,
                            started=started,
                            conn=conn,
                        ),
                    ]
            except BaseException:
                guards.drop_database(admin, pg_name)
                guards.drop_role(admin, self.cluster.conninfo, role)
                raise
        return Created(project, branch, self.catalog.databases(branch.id), [endpoint], ops)

    def delete_project(self, project_id: str) -> Project:
        """Drop every branch database and the project role, then forget the project.

        Holds the project's lock exclusively: branch creations in flight finish first (their
        databases are then in the catalog and dropped here), and later ones find no project.
        """
        with psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin, deleting(admin, project_id):
            project = self.project(project_id)
            for db in self.catalog.project_databases(project_id):
                guards.drop_database(admin, db.pg_name)
            # Roles before the catalog row: one that cannot be dropped fails the deletion by name, and
            # a retry finds the project (its databases are gone already, which is no error).
            guards.drop_readonly_role(admin, self.cluster.conninfo, project_id)
            guards.drop_role(admin, self.cluster.conninfo, project.role_name)
            self.catalog.delete_project_row(project_id)
        return project

    # Branches
    def _clone(self, admin: psycopg.Connection[Any], source: str, dest: str, owner: str) -> None:
        """Clone ``source`` into ``dest``. PostgreSQL waits 5 s for other sessions on a template to
        close before it refuses; then they are ended (a model's idle transaction must not stall a
        branch: waiting them out took 45 s and more), and the clone is tried again."""
        admin.execute("SELECT pg_advisory_lock(hashtext(%s))", (source,))
        try:
            statement = sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY OWNER {}").format(
                sql.Identifier(dest), sql.Identifier(source), sql.Identifier(owner)
            )
            for _ in range(10):
                try:
                    admin.execute(statement)
                    break
                except psycopg.errors.ObjectInUse:
                    admin.execute(
                        "SELECT pg_terminate_backend(pid, 2000) FROM pg_stat_activity "
                        "WHERE datname = %s AND pid <> pg_backend_pid()",
                        (source,),
                    )
            else:
                raise LocalNeonError(f"database {source} stayed busy; could not clone it")
            admin.execute(sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(sql.Identifier(dest)))
            if isolation.needs_seal(admin, dest, self.cluster.conninfo(dest)):
                isolation.seal_database(self.cluster.conninfo(dest))
        finally:
            admin.execute("SELECT pg_advisory_unlock(hashtext(%s))", (source,))

    def create_branch(
        self,
        project_id: str,
        *,
        parent_id: str | None = None,
        name: str | None = None,
        expires_at: datetime | None = None,
    ) -> Created:
        """A child branch whose databases are copies of the parent's at this moment."""
        with (
            psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin,
            creating(admin, project_id),
        ):
            return self._create_branch(admin, project_id, parent_id, name, expires_at)

    def _create_branch(
        self,
        admin: psycopg.Connection[Any],
        project_id: str,
        parent_id: str | None,
        name: str | None,
        expires_at: datetime | None,
    ) -> Created:
        started = datetime.now(UTC)
        project = self.project(project_id)  # looked up under the lock: a deleted project stays deleted
        parent = self.branch(project_id, parent_id)
        new_id = ids.branch_id()
        name = name or new_id
        _check_name("branch name", name)
        if self.catalog.get_branch_by_name(project_id, name) is not None:
            raise Conflict(f"branch {name!r} already exists in project {project_id}")
        if expires_at is not None and expires_at <= started:
            raise InvalidRequest("expires_at must be in the future")
        branch = Branch(new_id, project_id, name, parent.id, False, started, started, expires_at, None)
        endpoint = Endpoint(ids.endpoint_id(), project_id, new_id, started, started)
        clones: list[tuple[Database, str]] = []
        try:
            for db in self.catalog.databases(parent.id):
                dest = _physical_name(db.name)
                self._clone(admin, db.pg_name, dest, project.role_name)
                clones.append((db, dest))
            with self.catalog.connect() as conn:
                try:
                    self.catalog.insert_branch(conn, branch)
                except psycopg.errors.UniqueViolation as exc:
                    raise Conflict(f"branch {name!r} already exists in project {project_id}") from exc
                for db, dest in clones:
                    self.catalog.insert_database(conn, new_id, db.name, dest, db.owner_name)
                self.catalog.insert_endpoint(conn, endpoint)
                ops = [
                    self.catalog.record_operation(
                        project_id, "create_branch", branch_id=new_id, started=started, conn=conn
                    ),
                    self.catalog.record_operation(
                        project_id,
                        "start_compute",
                        branch_id=new_id,
                        endpoint_id=endpoint.id,
                        started=started,
                        conn=conn,
                    ),
                ]
        except BaseException:
            for _, dest in clones:
                guards.drop_database(admin, dest)
            raise
        return Created(project, branch, self.catalog.databases(new_id), [endpoint], ops)

    def delete_branch(self, project_id: str, branch_id: str) -> tuple[Branch, list[Operation]]:
        """Drop a non-default branch without children, and its databases."""
        started = datetime.now(UTC)
        branch = self.branch(project_id, branch_id)
        if branch.is_default:
            raise InvalidRequest(f"branch {branch.id} is the project's default branch and cannot be deleted")
        children = self.catalog.children(project_id, branch.id)
        if children:
            names = ", ".join(c.id for c in children)
            raise InvalidRequest(f"branch {branch.id} has child branches ({names}); delete them first")
        databases = self.catalog.databases(branch.id)
        endpoints = self.catalog.endpoints(project_id, branch.id)
        with psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin:
            for db in databases:
                guards.drop_database(admin, db.pg_name)
        with self.catalog.connect() as conn:
            conn.execute("DELETE FROM branches WHERE id = %s", (branch.id,))
            ops = [
                self.catalog.record_operation(
                    project_id,
                    "suspend_compute",
                    branch_id=branch.id,
                    endpoint_id=endpoints[0].id if endpoints else None,
                    started=started,
                    conn=conn,
                ),
                self.catalog.record_operation(
                    project_id, "delete_timeline", branch_id=branch.id, started=started, conn=conn
                ),
            ]
        return branch, ops

    # Databases
    def create_database(
        self, project_id: str, branch_id: str, name: str, owner: str
    ) -> tuple[Database, list[Operation]]:
        """A new, empty database on one branch, owned by the project's role (its children do not get it:
        on Neon a branch's databases are copied only when a child is made)."""
        _check_name("database name", name)
        with (
            psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin,
            creating(admin, project_id),
        ):
            project = self.project(project_id)
            branch = self.branch(project_id, branch_id)
            if not role_matches(project, owner):
                raise NotFound(f"role {owner!r} not found on branch {branch.id} (its role: {project.role_name})")
            if any(db.name == name for db in self.catalog.databases(branch.id)):
                raise Conflict(f"database {name!r} already exists on branch {branch.id}")
            pg_name = _physical_name(name)
            admin.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(pg_name), sql.Identifier(project.role_name)
                )
            )
            try:
                admin.execute(sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(sql.Identifier(pg_name)))
                isolation.seal_database(self.cluster.conninfo(pg_name))
                with self.catalog.connect() as conn:
                    self.catalog.insert_database(conn, branch.id, name, pg_name, project.role_name)
                    ops = [self.catalog.record_operation(project_id, "apply_config", branch_id=branch.id, conn=conn)]
            except BaseException:
                guards.drop_database(admin, pg_name)
                raise
        return self.database(branch, name), ops

    def delete_database(self, project_id: str, branch_id: str, name: str) -> tuple[Database, list[Operation]]:
        """Drop one database of a branch (its sessions ended first), and forget it."""
        branch = self.branch(project_id, branch_id)
        database = self.database(branch, name)
        with psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin:
            guards.drop_database(admin, database.pg_name)
        with self.catalog.connect() as conn:
            conn.execute("DELETE FROM databases WHERE id = %s", (database.id,))
            ops = [self.catalog.record_operation(project_id, "apply_config", branch_id=branch.id, conn=conn)]
        return database, ops

    def restore_branch(
        self, project_id: str, branch_id: str, source_id: str, preserve_under_name: str | None = None
    ) -> tuple[Branch, list[Operation]]:
        """Replace a branch's databases with copies of the source's; the id and URIs stay the same."""
        started = datetime.now(UTC)
        project = self.project(project_id)
        branch = self.branch(project_id, branch_id)
        source = self.branch(project_id, source_id)
        if source.id == branch.id:
            raise InvalidRequest("a branch cannot be restored from itself")
        children = [c for c in self.catalog.children(project_id, branch.id) if c.id != source.id]
        if children and not preserve_under_name:
            raise InvalidRequest(
                f"branch {branch.id} has child branches; pass preserve_under_name to keep its current state"
            )
        if preserve_under_name:
            _check_name("branch name", preserve_under_name)
            if self.catalog.get_branch_by_name(project_id, preserve_under_name):
                raise Conflict(f"branch {preserve_under_name!r} already exists in project {project_id}")
        target_dbs = {d.name: d for d in self.catalog.databases(branch.id)}
        source_dbs = self.catalog.databases(source.id)
        backup = Branch(
            ids.branch_id(), project_id, preserve_under_name or "", branch.id, False, started, started, None, None
        )
        backup_dbs: list[tuple[str, str, str]] = []
        new_dbs: list[tuple[str, str, str]] = []
        with (
            psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin,
            creating(admin, project_id),
        ):
            self.project(project_id)  # still there, now that deleting it has to wait for us
            for db in source_dbs:
                tmp = _physical_name(db.name)
                self._clone(admin, db.pg_name, tmp, project.role_name)
                old = target_dbs.pop(db.name, None)
                if old is None:
                    new_dbs.append((db.name, tmp, db.owner_name))
                    continue
                self._retire(admin, old, backup_dbs if preserve_under_name else None)
                admin.execute(
                    sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(tmp), sql.Identifier(old.pg_name))
                )
            for leftover in target_dbs.values():
                self._retire(admin, leftover, backup_dbs if preserve_under_name else None)
            with self.catalog.connect() as conn:
                for name in target_dbs:
                    conn.execute("DELETE FROM databases WHERE branch_id = %s AND name = %s", (branch.id, name))
                for name, pg_name, owner in new_dbs:
                    self.catalog.insert_database(conn, branch.id, name, pg_name, owner)
                conn.execute(
                    "UPDATE branches SET last_reset_at = now(), updated_at = now() WHERE id = %s", (branch.id,)
                )
                ops = [self.catalog.record_operation(project_id, "create_timeline", branch_id=branch.id, conn=conn)]
                if preserve_under_name:
                    self.catalog.insert_branch(conn, backup)
                    for name, pg_name, owner in backup_dbs:
                        self.catalog.insert_database(conn, backup.id, name, pg_name, owner)
                    conn.execute(
                        "UPDATE branches SET parent_id = %s WHERE parent_id = %s AND id <> %s AND id <> %s",
                        (backup.id, branch.id, backup.id, source.id),
                    )
                    self.catalog.insert_endpoint(
                        conn, Endpoint(ids.endpoint_id(), project_id, backup.id, started, started)
                    )
            # Restoring a Neon branch brings its roles back as they were; here roles are the cluster's.
            guards.reset_role(admin, project.role_name, project.role_password, isolation.SEARCH_PATH)
            password = guards.readonly_password(project.role_password)
            guards.reset_readonly_role(admin, project_id, project.role_name, password, isolation.SEARCH_PATH)
        return self.branch(project_id, branch.id), ops

    def _retire(self, admin: psycopg.Connection[Any], db: Database, keep: list[tuple[str, str, str]] | None) -> None:
        """Drop an old branch database, or rename it aside when the old state is being preserved."""
        if keep is None:
            guards.drop_database(admin, db.pg_name)
            return
        kept = _physical_name(db.name)
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (db.pg_name,),
        )
        rename = sql.SQL("ALTER DATABASE {} RENAME TO {}")
        admin.execute(rename.format(sql.Identifier(db.pg_name), sql.Identifier(kept)))
        keep.append((db.name, kept, db.owner_name))

    def delete_expired_branches(self, now: datetime | None = None) -> list[str]:
        """Delete branches whose ``expires_at`` is at or before ``now`` (children first); returns their ids.

        ``now`` defaults to this moment; a test passes its own instead of waiting for a branch to expire.
        """
        with self.catalog.connect() as conn:
            rows = conn.execute(
                "SELECT project_id, id FROM branches WHERE expires_at <= %s AND NOT is_default "
                "ORDER BY created_at DESC",
                (now or datetime.now(UTC),),
            ).fetchall()
        deleted = []
        for row in rows:
            try:
                self.delete_branch(row["project_id"], row["id"])
                deleted.append(row["id"])
            except LocalNeonError:
                continue  # gone already, or it still has children that have not expired
        return deleted

    def restart_endpoint(self, project_id: str, branch_id: str, endpoint_id: str) -> list[Operation]:
        """End every session on the branch's databases (a compute restart, as on Neon)."""
        names = [db.pg_name for db in self.catalog.databases(branch_id)]
        with psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_catalog.pg_terminate_backend(pid, 5000) FROM pg_catalog.pg_stat_activity "
                "WHERE datname = ANY(%s) AND pid <> pg_catalog.pg_backend_pid()",
                (names,),
            )
        return [
            self.catalog.record_operation(project_id, action, branch_id=branch_id, endpoint_id=endpoint_id)
            for action in ("suspend_compute", "start_compute")
        ]

    def set_default(self, project_id: str, branch_id: str) -> tuple[Branch, list[Operation]]:
        branch = self.branch(project_id, branch_id)
        with self.catalog.connect() as conn:
            conn.execute("UPDATE branches SET is_default = (id = %s) WHERE project_id = %s", (branch.id, project_id))
            ops = [self.catalog.record_operation(project_id, "apply_config", branch_id=branch.id, conn=conn)]
        return self.branch(project_id, branch.id), ops

    # Schema
    def schema_dump(self, target: Target) -> str:
        """``pg_dump --schema-only --no-owner --no-privileges`` of the branch database (trailer kept)."""
        conninfo = self.admin_conninfo(target.database)
        pg_dump = find_pg_dump(server_major(self.cluster.admin_conninfo))
        proc = subprocess.run(
            [pg_dump, *DUMP_FLAGS, "--dbname", conninfo],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise LocalNeonError(f"pg_dump of branch {target.branch.id} failed: {proc.stderr.strip()}")
        return isolation.without_login_trigger(proc.stdout)
