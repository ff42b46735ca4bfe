"""Branches and what a branch holds (schema, databases, roles, endpoints), as Neon's API v2 serves them."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from localneon.engine import sql
from localneon.engine.branching import Neon, Target
from localneon.engine.errors import InvalidRequest
from localneon.engine.schema_diff import schema_diff
from localneon.rest.bodies import branch_json, created_json, database_json, endpoint_json, operation_json, role_json
from localneon.rest.call import Call, timestamp


def list_branches(call: Call) -> Response:
    project = call.project()
    branches = call.neon.catalog.list_branches(project.id, call.query.get("search"))
    sort_by = call.query.get("sort_by", "updated_at")
    order = call.query.get("sort_order", "desc")
    if sort_by not in ("name", "created_at", "updated_at"):
        raise InvalidRequest("sort_by must be name, created_at or updated_at")
    branches.sort(key=lambda x: (getattr(x, sort_by), x.id), reverse=order == "desc")
    start = call.offset()
    limit = call.limit(10_000, maximum=10_000)
    page = branches[start : start + limit]
    pagination: dict[str, Any] = {"sort_by": sort_by, "sort_order": order}
    if start + limit < len(branches):
        pagination["next"] = str(start + limit)
    return JSONResponse({"branches": [branch_json(x) for x in page], "annotations": {}, "pagination": pagination})


def create_branch(call: Call) -> Response:
    body = call.body()
    spec = body.get("branch") or {}
    if not isinstance(spec, dict):
        raise InvalidRequest("'branch' must be an object")
    if spec.get("init_source") not in (None, "parent-data"):
        raise InvalidRequest("only init_source 'parent-data' is supported here")
    created = call.neon.create_branch(
        call.path("project_id"),
        parent_id=spec.get("parent_id"),
        name=spec.get("name"),
        expires_at=timestamp(spec.get("expires_at"), "expires_at"),
    )
    payload = created_json(call.neon, created)
    if not body.get("endpoints"):
        # Neon makes a compute only when asked; the local record exists either way.
        payload["endpoints"] = [endpoint_json(call.neon, e) for e in created.endpoints]
    return JSONResponse(payload, status_code=201)


def get_branch(call: Call) -> Response:
    branch = call.branch()
    annotation = {"object": {"type": "console/branch", "id": branch.id}, "value": {}}
    return JSONResponse({"branch": branch_json(branch), "annotation": annotation})


def delete_branch(call: Call) -> Response:
    project = call.project()
    if call.neon.catalog.get_branch(project.id, call.path("branch_id")) is None:
        return Response(status_code=204)
    branch, ops = call.neon.delete_branch(project.id, call.path("branch_id"))
    return JSONResponse({"branch": branch_json(branch), "operations": [operation_json(o) for o in ops]})


def restore_branch(call: Call) -> Response:
    body = call.body()
    branch = call.branch()
    source = body.get("source_branch_id")
    if not source:
        raise InvalidRequest("source_branch_id is required")
    if body.get("source_lsn") or body.get("source_timestamp"):
        raise InvalidRequest("point-in-time restore (source_lsn, source_timestamp) is not available here")
    restored, ops = call.neon.restore_branch(
        branch.project_id, branch.id, source, body.get("preserve_under_name") or None
    )
    return JSONResponse({"branch": branch_json(restored), "operations": [operation_json(o) for o in ops]})


def set_default(call: Call) -> Response:
    branch = call.branch()
    updated, ops = call.neon.set_default(branch.project_id, branch.id)
    return JSONResponse({"branch": branch_json(updated), "operations": [operation_json(o) for o in ops]})


def branch_schema(call: Call) -> Response:
    branch = call.branch()
    db_name = call.query.get("db_name")
    if not db_name:
        raise InvalidRequest("db_name is required")
    if call.query.get("lsn") or call.query.get("timestamp"):
        raise InvalidRequest("schemas at an lsn or timestamp are not available here")
    fmt = call.query.get("format", "sql")
    t = call.neon.target(branch.project_id, branch.id, db_name)
    if fmt == "sql":
        return JSONResponse({"sql": call.neon.schema_dump(t)})
    if fmt == "json":
        return JSONResponse({"json": {"tables": _tables_json(call.neon, t)}})
    raise InvalidRequest("format must be sql or json")


def _tables_json(neon: Neon, t: Target) -> list[dict[str, Any]]:
    conninfo = neon.role_conninfo(t)
    tables = []
    for row in sql.list_tables(conninfo):
        info = sql.describe_table(conninfo, f'"{row["schema"]}"."{row["table_name"]}"')
        columns = [{"name": c["name"], "type": c["type"]} for c in (info or {}).get("columns", [])]
        tables.append({"schema": row["schema"], "name": row["table_name"], "columns": columns})
    return tables


def compare_schema(call: Call) -> Response:
    branch = call.branch()
    db_name = call.query.get("db_name")
    if not db_name:
        raise InvalidRequest("db_name is required")
    base = call.query.get("base_branch_id") or None
    return JSONResponse({"diff": schema_diff(call.neon, branch.project_id, branch.id, db_name, base)})


def branch_databases(call: Call) -> Response:
    branch = call.branch()
    return JSONResponse({"databases": [database_json(d) for d in call.neon.catalog.databases(branch.id)]})


def branch_database(call: Call) -> Response:
    branch = call.branch()
    database = call.neon.database(branch, call.path("database_name"))
    return JSONResponse({"database": database_json(database)})


def create_database(call: Call) -> Response:
    spec = call.body().get("database")
    if not isinstance(spec, dict) or not spec.get("name") or not spec.get("owner_name"):
        raise InvalidRequest("body must be {'database': {'name': ..., 'owner_name': ...}}")
    branch = call.branch()
    database, ops = call.neon.create_database(branch.project_id, branch.id, str(spec["name"]), str(spec["owner_name"]))
    return JSONResponse(
        {"database": database_json(database), "operations": [operation_json(o) for o in ops]}, status_code=201
    )


def delete_database(call: Call) -> Response:
    branch = call.branch()
    database, ops = call.neon.delete_database(branch.project_id, branch.id, call.path("database_name"))
    return JSONResponse({"database": database_json(database), "operations": [operation_json(o) for o in ops]})


def branch_roles(call: Call) -> Response:
    branch = call.branch()
    return JSONResponse({"roles": [role_json(call.neon.project(branch.project_id), branch.id)]})


def branch_endpoints(call: Call) -> Response:
    branch = call.branch()
    endpoints = call.neon.catalog.endpoints(branch.project_id, branch.id)
    return JSONResponse({"endpoints": [endpoint_json(call.neon, e) for e in endpoints]})
