"""Neon API v2 resource bodies (project, branch, endpoint, database, role, operation) built from the
catalog, with the field names and shapes of Neon's OpenAPI schemas, so clients written for Neon's
cloud parse them unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.responses import JSONResponse

from localneon.engine.branching import Created, Neon, Target
from localneon.engine.catalog import Branch, Database, Endpoint, Operation, Project, iso

PG_VERSION = 18
REGION = "local"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def error(status: int, message: str, code: str = "") -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status)


# Serializers: shapes from the OpenAPI components (Project, Branch, Endpoint, ...)
def _host(neon: Neon) -> str:
    return neon.cluster.public_host


def project_json(neon: Neon, p: Project, *, list_item: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": p.id,
        "platform_id": "local",
        "region_id": REGION,
        "name": p.name,
        "provisioner": "k8s-pod",
        "pg_version": PG_VERSION,
        "proxy_host": _host(neon),
        "branch_logical_size_limit": 0,
        "branch_logical_size_limit_bytes": 0,
        "store_passwords": True,
        "cpu_used_sec": 0,
        "creation_source": "localneon",
        "history_retention_seconds": 0,
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
        "owner_id": "local",
        "org_id": p.org_id,
        "settings": {},
        "default_endpoint_settings": {},
    }
    if list_item:
        data["active_time"] = 0
    else:
        data.update(
            active_time_seconds=0,
            compute_time_seconds=0,
            written_data_bytes=0,
            data_transfer_bytes=0,
            data_storage_bytes_hour=0,
            consumption_period_start=iso(p.created_at),
            consumption_period_end=iso(EPOCH.replace(year=2100)),
        )
    return data


def branch_json(b: Branch) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": b.id,
        "project_id": b.project_id,
        "name": b.name,
        "current_state": "ready",
        "state_changed_at": iso(b.updated_at),
        "creation_source": "localneon",
        "created_at": iso(b.created_at),
        "updated_at": iso(b.updated_at),
        "default": b.is_default,
        "primary": b.is_default,
        "protected": False,
        "cpu_used_sec": 0,
        "active_time_seconds": 0,
        "compute_time_seconds": 0,
        "written_data_bytes": 0,
        "data_transfer_bytes": 0,
        "init_source": "parent-data",
    }
    if b.parent_id:
        data["parent_id"] = b.parent_id
        data["parent_timestamp"] = iso(b.created_at)
    if b.expires_at:
        data["expires_at"] = iso(b.expires_at)
    if b.last_reset_at:
        data["last_reset_at"] = iso(b.last_reset_at)
    return data


def endpoint_json(neon: Neon, e: Endpoint) -> dict[str, Any]:
    return {
        "host": _host(neon),
        "id": e.id,
        "project_id": e.project_id,
        "branch_id": e.branch_id,
        "region_id": REGION,
        "autoscaling_limit_min_cu": 0.25,
        "autoscaling_limit_max_cu": 0.25,
        "type": "read_write",
        "current_state": "active",
        "pooler_enabled": False,
        "pooler_mode": "transaction",
        "disabled": False,
        "passwordless_access": False,
        "creation_source": "localneon",
        "created_at": iso(e.created_at),
        "updated_at": iso(e.updated_at),
        "settings": {},
        "proxy_host": _host(neon),
        "suspend_timeout_seconds": 0,
        "provisioner": "k8s-pod",
    }


def database_json(d: Database) -> dict[str, Any]:
    return {
        "id": d.id,
        "branch_id": d.branch_id,
        "name": d.name,
        "owner_name": d.owner_name,
        "created_at": iso(d.created_at),
        "updated_at": iso(d.updated_at),
    }


def role_json(p: Project, branch_id: str, *, with_password: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "branch_id": branch_id,
        "name": p.role_name,
        "protected": False,
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
    }
    if with_password:
        data["password"] = p.role_password
    return data


def operation_json(o: Operation) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": o.id,
        "project_id": o.project_id,
        "action": o.action,
        "status": o.status,
        "failures_count": 0,
        "created_at": iso(o.created_at),
        "updated_at": iso(o.updated_at),
        "total_duration_ms": o.total_duration_ms,
    }
    if o.branch_id:
        data["branch_id"] = o.branch_id
    if o.endpoint_id:
        data["endpoint_id"] = o.endpoint_id
    if o.error:
        data["error"] = o.error
    return data


def connection_details(neon: Neon, t: Target) -> dict[str, Any]:
    return {
        "connection_uri": neon.uri(t),
        "connection_parameters": {
            "database": t.database.name,
            "password": t.project.role_password,
            "role": t.project.role_name,
            "host": _host(neon),
            "pooler_host": _host(neon),
        },
    }


def created_json(neon: Neon, c: Created) -> dict[str, Any]:
    targets = [Target(c.project, c.branch, d) for d in c.databases]
    return {
        "branch": branch_json(c.branch),
        "endpoints": [endpoint_json(neon, e) for e in c.endpoints],
        "databases": [database_json(d) for d in c.databases],
        "roles": [role_json(c.project, c.branch.id, with_password=True)],
        "connection_uris": [connection_details(neon, t) for t in targets],
        "operations": [operation_json(o) for o in c.operations],
    }
