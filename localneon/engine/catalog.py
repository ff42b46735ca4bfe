"""Projects, branches, databases, endpoints and operations, stored in a PostgreSQL database.

State lives in the cluster (database ``localneon_catalog``), never in process memory, so every
localneon process pointed at the same cluster (an MCP stdio process, an HTTP server, a test run)
sees the same projects. This module only reads and writes catalog rows; ``branching`` does the
physical work (databases and roles) and calls into here.
"""

from __future__ import annotations

import contextlib
import select
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from localneon.cluster.pg import Cluster

CATALOG_DB = "localneon_catalog"
LOCAL_ORG_ID = "org-localneon"
LOCAL_ORG_NAME = "localneon"
_INIT_LOCK_KEY = 0x10CA1_2E0  # advisory lock key guarding catalog creation

_SCHEMA = """
CREATE TABLE IF NOT EXISTS projects (
    id text PRIMARY KEY,
    name text NOT NULL,
    org_id text NOT NULL,
    role_name text NOT NULL UNIQUE,
    role_password text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS branches (
    id text PRIMARY KEY,
    project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name text NOT NULL,
    parent_id text,
    is_default boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    last_reset_at timestamptz,
    UNIQUE (project_id, name)
);
CREATE TABLE IF NOT EXISTS databases (
    id bigserial PRIMARY KEY,
    branch_id text NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
    name text NOT NULL,
    pg_name text NOT NULL UNIQUE,
    owner_name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (branch_id, name)
);
CREATE TABLE IF NOT EXISTS endpoints (
    id text PRIMARY KEY,
    project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    branch_id text NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS operations (
    id uuid PRIMARY KEY,
    project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    branch_id text,
    endpoint_id text,
    action text NOT NULL,
    status text NOT NULL,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    total_duration_ms integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS operations_project_idx ON operations (project_id, created_at DESC);
CREATE TABLE IF NOT EXISTS tunings (
    id text PRIMARY KEY,
    project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    branch_id text NOT NULL,
    temp_branch_id text NOT NULL,
    database_name text NOT NULL,
    sql text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS neon_auth (
    branch_id text PRIMARY KEY REFERENCES branches(id) ON DELETE CASCADE,
    project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    database_name text NOT NULL,
    auth_provider text NOT NULL,
    auth_provider_project_id text NOT NULL,
    settings jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
"""


def iso(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with a ``Z``, as Neon's API writes timestamps."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    org_id: str
    role_name: str
    role_password: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Branch:
    id: str
    project_id: str
    name: str
    parent_id: str | None
    is_default: bool
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    last_reset_at: datetime | None


@dataclass(frozen=True)
class Database:
    id: int
    branch_id: str
    name: str
    pg_name: str
    owner_name: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Endpoint:
    id: str
    project_id: str
    branch_id: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Operation:
    id: str
    project_id: str
    branch_id: str | None
    endpoint_id: str | None
    action: str
    status: str
    error: str | None
    created_at: datetime
    updated_at: datetime
    total_duration_ms: int


def _row(cls: type[Any], row: dict[str, Any] | None) -> Any:
    if row is None:
        return None
    if cls is Operation:
        row = {**row, "id": str(row["id"])}
    return cls(**row)


def _still_open(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection is still usable, without a round trip: an idle session receives
    nothing, so a readable socket means the server has ended it (its FATAL message, or end of file)."""
    if conn.closed:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class Catalog:
    """Catalog rows in ``localneon_catalog``; each method takes a connection from a small pool.

    Why a pool: a trial makes about forty catalog reads, and a fresh connection costs PostgreSQL
    about 4 ms of CPU (a forked backend) against 0.1 ms for a query; that was a tenth of a trial's
    CPU. Connections are handed to one caller at a time, reset by commit or rollback on return, and
    checked before reuse (by its socket, not a query: a `SELECT 1` halved the speed of a read), so a
    restarted PostgreSQL costs one reconnect, not an error."""

    IDLE_CONNECTIONS = 4  # kept open between calls; more at once are opened and closed as needed

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.conninfo = cluster.conninfo(CATALOG_DB)
        self._idle: list[psycopg.Connection[dict[str, Any]]] = []
        self._idle_lock = threading.Lock()

    def ensure(self) -> None:
        """Create the catalog database and tables if missing (safe under concurrency)."""
        with psycopg.connect(self.cluster.admin_conninfo, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (_INIT_LOCK_KEY,))
            try:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (CATALOG_DB,)).fetchone()
                if not exists:
                    conn.execute(f'CREATE DATABASE "{CATALOG_DB}"')
                    conn.execute(f'REVOKE CONNECT ON DATABASE "{CATALOG_DB}" FROM PUBLIC')
                with psycopg.connect(self.conninfo, autocommit=True) as cat:
                    cat.execute(_SCHEMA)
                    # For list_slow_queries; an external server may lack contrib, which only that tool needs.
                    with contextlib.suppress(psycopg.Error):
                        cat.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_INIT_LOCK_KEY,))

    @contextmanager
    def connect(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        """A catalog connection for one unit of work: commits on success, rolls back on error."""
        conn = self._take()
        try:
            yield conn
            conn.commit()
        except BaseException:
            with contextlib.suppress(psycopg.Error):
                conn.rollback()
            raise
        finally:
            self._give_back(conn)  # kept only when idle again; a failed commit's connection is closed

    def _take(self) -> psycopg.Connection[dict[str, Any]]:
        while True:
            with self._idle_lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return psycopg.connect(self.conninfo, row_factory=dict_row)
            if _still_open(conn):
                return conn
            conn.close()  # the server restarted or ended it: try the next one, or a new one

    def _give_back(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        usable = not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with self._idle_lock:
            if usable and len(self._idle) < self.IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the idle connections (a process that ends closes them anyway)."""
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # Projects
    def insert_project(self, conn: psycopg.Connection[dict[str, Any]], project: Project) -> None:
        conn.execute(
            "INSERT INTO projects (id, name, org_id, role_name, role_password, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                project.id,
                project.name,
                project.org_id,
                project.role_name,
                project.role_password,
                project.created_at,
                project.updated_at,
            ),
        )

    def get_project(self, project_id: str) -> Project | None:
        with self.connect() as conn:
            row = conn.execute("SELECT * FROM projects WHERE id = %s", (project_id,)).fetchone()
        return _row(Project, row)

    def list_projects(self, search: str | None, after: str | None, limit: int) -> list[Project]:
        """Projects ordered by id; ``after`` is the cursor (the last id of the previous page)."""
        sql = "SELECT * FROM projects WHERE true"
        args: list[Any] = []
        if search:
            sql += " AND (name ILIKE %s OR id ILIKE %s)"
            args += [f"%{search}%", f"%{search}%"]
        if after:
            sql += " AND id > %s"
            args.append(after)
        sql += " ORDER BY id LIMIT %s"
        args.append(limit)
        with self.connect() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [_row(Project, r) for r in rows]

    def delete_project_row(self, project_id: str) -> None:
        with self.connect() as conn:
            conn.execute("DELETE FROM projects WHERE id = %s", (project_id,))

    # Branches
    def insert_branch(self, conn: psycopg.Connection[dict[str, Any]], branch: Branch) -> None:
        conn.execute(
            "INSERT INTO branches (id, project_id, name, parent_id, is_default, created_at, updated_at, expires_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                branch.id,
                branch.project_id,
                branch.name,
                branch.parent_id,
                branch.is_default,
                branch.created_at,
                branch.updated_at,
                branch.expires_at,
            ),
        )

    def get_branch(self, project_id: str, branch_id: str) -> Branch | None:
        with self.connect() as conn:
            row = conn.execute(
                "SELECT * FROM branches WHERE project_id = %s AND id = %s", (project_id, branch_id)
            ).fetchone()
        return _row(Branch, row)

    def get_branch_any_project(self, branch_id: str) -> Branch | None:
        with self.connect() as conn:
            row = conn.execute("SELECT * FROM branches WHERE id = %s", (branch_id,)).fetchone()
        return _row(Branch, row)

    def get_branch_by_name(self, project_id: str, name: str) -> Branch | None:
        with self.connect() as conn:
            row = conn.execute(
                "SELECT * FROM branches WHERE project_id = %s AND name = %s", (project_id, name)
            ).fetchone()
        return _row(Branch, row)

    def default_branch(self, project_id: str) -> Branch | None:
        with self.connect() as conn:
            row = conn.execute("SELECT * FROM branches WHERE project_id = %s AND is_default", (project_id,)).fetchone()
        return _row(Branch, row)

    def list_branches(self, project_id: str, search: str | None = None) -> list[Branch]:
        sql = "SELECT * FROM branches WHERE project_id = %s"
        args: list[Any] = [project_id]
        if search:
            sql += " AND (name ILIKE %s OR id ILIKE %s)"
            args += [f"%{search}%", f"%{search}%"]
        sql += " ORDER BY created_at, id"
        with self.connect() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [_row(Branch, r) for r in rows]

    def search_branches(self, text: str, limit: int = 20) -> list[Branch]:
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT * FROM branches WHERE name ILIKE %s OR id ILIKE %s ORDER BY created_at LIMIT %s",
                (f"%{text}%", f"%{text}%", limit),
            ).fetchall()
        return [_row(Branch, r) for r in rows]

    def children(self, project_id: str, branch_id: str) -> list[Branch]:
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT * FROM branches WHERE project_id = %s AND parent_id = %s ORDER BY created_at",
                (project_id, branch_id),
            ).fetchall()
        return [_row(Branch, r) for r in rows]

    # Databases and endpoints
    def insert_database(
        self, conn: psycopg.Connection[dict[str, Any]], branch_id: str, name: str, pg_name: str, owner: str
    ) -> None:
        conn.execute(
            "INSERT INTO databases (branch_id, name, pg_name, owner_name) VALUES (%s, %s, %s, %s)",
            (branch_id, name, pg_name, owner),
        )

    def databases(self, branch_id: str) -> list[Database]:
        with self.connect() as conn:
            rows = conn.execute("SELECT * FROM databases WHERE branch_id = %s ORDER BY id", (branch_id,)).fetchall()
        return [_row(Database, r) for r in rows]

    def project_databases(self, project_id: str) -> list[Database]:
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT d.* FROM databases d JOIN branches b ON b.id = d.branch_id WHERE b.project_id = %s",
                (project_id,),
            ).fetchall()
        return [_row(Database, r) for r in rows]

    def insert_endpoint(self, conn: psycopg.Connection[dict[str, Any]], endpoint: Endpoint) -> None:
        conn.execute(
            "INSERT INTO endpoints (id, project_id, branch_id, created_at, updated_at) VALUES (%s, %s, %s, %s, %s)",
            (endpoint.id, endpoint.project_id, endpoint.branch_id, endpoint.created_at, endpoint.updated_at),
        )

    def endpoints(self, project_id: str, branch_id: str | None = None) -> list[Endpoint]:
        sql = "SELECT * FROM endpoints WHERE project_id = %s"
        args: list[Any] = [project_id]
        if branch_id:
            sql += " AND branch_id = %s"
            args.append(branch_id)
        with self.connect() as conn:
            rows = conn.execute(sql + " ORDER BY created_at", args).fetchall()
        return [_row(Endpoint, r) for r in rows]

    # Operations
    def record_operation(
        self,
        project_id: str,
        action: str,
        *,
        branch_id: str | None = None,
        endpoint_id: str | None = None,
        started: datetime | None = None,
        conn: psycopg.Connection[dict[str, Any]] | None = None,
    ) -> Operation:
        """Record an operation that already ran to completion (local work is synchronous)."""
        import uuid

        now = datetime.now(UTC)
        started = started or now
        op = Operation(
            id=str(uuid.uuid4()),
            project_id=project_id,
            branch_id=branch_id,
            endpoint_id=endpoint_id,
            action=action,
            status="finished",
            error=None,
            created_at=started,
            updated_at=now,
            total_duration_ms=int((now - started).total_seconds() * 1000),
        )
        sql = (
            "INSERT INTO operations (id, project_id, branch_id, endpoint_id, action, status, created_at, "
            "updated_at, total_duration_ms) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        )
        args = (
            op.id,
            op.project_id,
            op.branch_id,
            op.endpoint_id,
            op.action,
            op.status,
            op.created_at,
            op.updated_at,
            op.total_duration_ms,
        )
        if conn is not None:
            conn.execute(sql, args)
        else:
            with self.connect() as own:
                own.execute(sql, args)
        return op

    def get_operation(self, project_id: str, operation_id: str) -> Operation | None:
        with self.connect() as conn:
            row = conn.execute(
                "SELECT * FROM operations WHERE project_id = %s AND id::text = %s", (project_id, operation_id)
            ).fetchone()
        return _row(Operation, row)

    def list_operations(self, project_id: str, offset: int, limit: int) -> list[Operation]:
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT * FROM operations WHERE project_id = %s ORDER BY created_at DESC, id OFFSET %s LIMIT %s",
                (project_id, offset, limit),
            ).fetchall()
        return [_row(Operation, r) for r in rows]

    # Query tuning sessions (kept here, not in memory, so any process can complete them)
    def insert_tuning(
        self, tuning_id: str, project_id: str, branch_id: str, temp_branch_id: str, database: str, sql: str
    ) -> None:
        with self.connect() as conn:
            conn.execute(
                "INSERT INTO tunings (id, project_id, branch_id, temp_branch_id, database_name, sql) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (tuning_id, project_id, branch_id, temp_branch_id, database, sql),
            )

    def get_tuning(self, tuning_id: str) -> dict[str, Any] | None:
        with self.connect() as conn:
            return conn.execute("SELECT * FROM tunings WHERE id = %s", (tuning_id,)).fetchone()

    # Neon Auth integrations, one per branch (kept here so every process and the REST API agree)
    def insert_neon_auth(
        self, project_id: str, branch_id: str, database: str, provider: str, provider_project: str, settings: Any
    ) -> bool:
        """Record an integration; False (and nothing changed) when the branch already has one."""
        with self.connect() as conn:
            row = conn.execute(
                "INSERT INTO neon_auth (branch_id, project_id, database_name, auth_provider, auth_provider_project_id, "
                "settings) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (branch_id) DO NOTHING RETURNING branch_id",
                (branch_id, project_id, database, provider, provider_project, Jsonb(settings)),
            ).fetchone()
        return row is not None

    def get_neon_auth(self, project_id: str, branch_id: str) -> dict[str, Any] | None:
        with self.connect() as conn:
            return conn.execute(
                "SELECT * FROM neon_auth WHERE project_id = %s AND branch_id = %s", (project_id, branch_id)
            ).fetchone()

    def modify_neon_auth(
        self, project_id: str, branch_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any] | None:
        """Replace an integration's settings by ``change(settings)`` under a row lock (None: no integration).

        ``change`` may raise to refuse the change; the row is then left as it was."""
        with self.connect() as conn:
            row = conn.execute(
                "SELECT settings FROM neon_auth WHERE project_id = %s AND branch_id = %s FOR UPDATE",
                (project_id, branch_id),
            ).fetchone()
            if row is None:
                return None
            settings = change(row["settings"])
            conn.execute(
                "UPDATE neon_auth SET settings = %s WHERE project_id = %s AND branch_id = %s",
                (Jsonb(settings), project_id, branch_id),
            )
        return settings
