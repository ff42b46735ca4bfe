"""Projects, their endpoints, connection URIs and operations, as Neon's API v2 serves them.

Local work is synchronous, so every operation a route returns is already ``finished``.
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from localneon.engine.branching import role_matches
from localneon.engine.errors import InvalidRequest, NotFound
from localneon.rest.bodies import PG_VERSION, created_json, endpoint_json, operation_json, project_json
from localneon.rest.call import Call


def list_projects(call: Call) -> Response:
    limit = call.limit(10)
    org = call.query.get("org_id")
    projects = call.neon.catalog.list_projects(call.query.get("search"), call.query.get("cursor"), limit)
    if org:
        projects = [p for p in projects if p.org_id == org]
    cursor = projects[-1].id if projects else (call.query.get("cursor") or "")
    return JSONResponse(
        {
            "projects": [project_json(call.neon, p, list_item=True) for p in projects],
            "pagination": {"cursor": cursor},
            "applications": {},
            "integrations": {},
        }
    )


def create_project(call: Call) -> Response:
    spec = call.body().get("project")
    if not isinstance(spec, dict):
        raise InvalidRequest("the request body needs a 'project' object")
    version = spec.get("pg_version")
    if version not in (None, PG_VERSION):
        raise InvalidRequest(f"pg_version {version} is not available here; this server runs {PG_VERSION}")
    branch = spec.get("branch") or {}
    created = call.neon.create_project(
        spec.get("name"),
        branch_name=branch.get("name"),
        database_name=branch.get("database_name"),
        role_name=branch.get("role_name"),
        org_id=spec.get("org_id"),
    )
    payload = {"project": project_json(call.neon, created.project), **created_json(call.neon, created)}
    return JSONResponse(payload, status_code=201)


def shared_projects(call: Call) -> Response:
    """Projects other accounts shared with this one: localneon has one account, so none."""
    call.limit(10)
    return JSONResponse({"projects": []})  # no pagination: there is no next page


def get_project(call: Call) -> Response:
    return JSONResponse({"project": project_json(call.neon, call.project())})


def delete_project(call: Call) -> Response:
    project = call.neon.delete_project(call.path("project_id"))
    return JSONResponse({"project": project_json(call.neon, project)})


def project_endpoints(call: Call) -> Response:
    endpoints = call.neon.catalog.endpoints(call.project().id)
    return JSONResponse({"endpoints": [endpoint_json(call.neon, e) for e in endpoints]})


def restart_endpoint(call: Call) -> Response:
    """Neon's compute restart: every session on the endpoint's branch ends (its locks, its open
    transactions); the harness uses it to end a model's sessions before it reads main."""
    project = call.project()
    endpoint_id = call.path("endpoint_id")
    endpoint = next((e for e in call.neon.catalog.endpoints(project.id) if e.id == endpoint_id), None)
    if endpoint is None:
        raise NotFound(f"endpoint {endpoint_id!r} not found in project {project.id}")
    ops = call.neon.restart_endpoint(project.id, endpoint.branch_id, endpoint.id)
    return JSONResponse(
        {"endpoint": endpoint_json(call.neon, endpoint), "operations": [operation_json(o) for o in ops]}
    )


def connection_uri(call: Call) -> Response:
    q = call.query
    project_id = call.path("project_id")
    if not q.get("database_name") or not q.get("role_name"):
        raise InvalidRequest("database_name and role_name are required")
    branch_id = q.get("branch_id")
    endpoint_id = q.get("endpoint_id")
    if endpoint_id and not branch_id:
        matches = [e for e in call.neon.catalog.endpoints(project_id) if e.id == endpoint_id]
        if not matches:
            raise NotFound(f"endpoint {endpoint_id!r} not found in project {project_id}")
        branch_id = matches[0].branch_id
    t = call.neon.target(project_id, branch_id or None, q["database_name"])
    if not role_matches(t.project, q["role_name"]):
        raise NotFound(f"role {q['role_name']!r} not found; the project's role is {t.project.role_name}")
    return JSONResponse({"uri": call.neon.uri(t)})


def list_operations(call: Call) -> Response:
    project = call.project()
    start = call.offset()
    limit = call.limit(10, maximum=1000)
    ops = call.neon.catalog.list_operations(project.id, start, limit)
    return JSONResponse(
        {"operations": [operation_json(o) for o in ops], "pagination": {"cursor": str(start + len(ops))}}
    )


def get_operation(call: Call) -> Response:
    project = call.project()
    op = call.neon.catalog.get_operation(project.id, call.path("operation_id"))
    if op is None:
        raise NotFound(f"operation {call.path('operation_id')!r} not found")
    return JSONResponse({"operation": operation_json(op)})
