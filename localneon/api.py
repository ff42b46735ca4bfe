"""A Neon-shaped REST API (``/api/v2``) over the same catalog the MCP tools use.

Paths, fields and status codes follow Neon's API v2 so that a client written for Neon's cloud
(an eval harness creating sandboxes, loading fixtures, dumping schemas) works unchanged. Local
work is synchronous, so every returned operation is already ``finished``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from localneon.api_account import account_routes
from localneon.api_auth import auth_routes
from localneon.api_json import (
    PG_VERSION,
    branch_json,
    created_json,
    database_json,
    endpoint_json,
    error,
    json_body,
    operation_json,
    project_json,
    role_json,
)
from localneon.branching import Neon, Target, role_matches
from localneon.catalog import Branch
from localneon.errors import InvalidRequest, LocalNeonError, NotFound
from localneon.tools.branches import schema_diff


# Request helpers
def _limit(request: Request, default: int, maximum: int = 400) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise InvalidRequest(f"limit must be an integer, got {raw!r}") from exc
    if not 1 <= value <= maximum:
        raise InvalidRequest(f"limit must be between 1 and {maximum}")
    return value


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        return max(int(cursor), 0)
    except ValueError as exc:
        raise InvalidRequest(f"invalid cursor {cursor!r}") from exc


def _time(value: Any, field: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequest(f"{field} must be an RFC 3339 timestamp") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Api:
    """Route handlers bound to one ``Neon``; blocking work runs in Starlette's thread pool."""

    def __init__(self, neon: Neon) -> None:
        self.neon = neon

    def routes(self) -> list[Route]:
        p = "/projects/{project_id}"
        b = p + "/branches/{branch_id}"
        return [
            *account_routes(),
            Route("/projects", self.list_projects, methods=["GET"]),
            Route("/projects/shared", self.shared_projects, methods=["GET"]),  # before {project_id}
            Route("/projects", self.create_project, methods=["POST"]),
            Route(p, self.get_project, methods=["GET"]),
            Route(p, self.delete_project, methods=["DELETE"]),
            Route(p + "/branches", self.list_branches, methods=["GET"]),
            Route(p + "/branches", self.create_branch, methods=["POST"]),
            Route(b, self.get_branch, methods=["GET"]),
            Route(b, self.delete_branch, methods=["DELETE"]),
            Route(b + "/restore", self.restore_branch, methods=["POST"]),
            Route(b + "/set_as_default", self.set_default, methods=["POST"]),
            Route(b + "/schema", self.branch_schema, methods=["GET"]),
            Route(b + "/compare_schema", self.compare_schema, methods=["GET"]),
            Route(b + "/databases", self.branch_databases, methods=["GET"]),
            Route(b + "/databases/{database_name}", self.branch_database, methods=["GET"]),
            Route(b + "/roles", self.branch_roles, methods=["GET"]),
            Route(b + "/endpoints", self.branch_endpoints, methods=["GET"]),
            Route(p + "/endpoints", self.project_endpoints, methods=["GET"]),
            Route(p + "/endpoints/{endpoint_id}/restart", self.restart_endpoint, methods=["POST"]),
            Route(p + "/connection_uri", self.connection_uri, methods=["GET"]),
            Route(p + "/operations", self.list_operations, methods=["GET"]),
            Route(p + "/operations/{operation_id}", self.get_operation, methods=["GET"]),
            *auth_routes(self),
        ]

    async def _run(self, fn: Callable[[], Response]) -> Response:
        from starlette.concurrency import run_in_threadpool

        try:
            return await run_in_threadpool(fn)
        except LocalNeonError as exc:
            return error(exc.status, exc.message, exc.code)
        except Exception as exc:
            # An unexpected failure (PostgreSQL refused, a bug): the client gets the real reason in
            # Neon's error body, not a bare "Internal Server Error"; the traceback goes to stderr.
            traceback.print_exc(file=sys.stderr)
            return error(500, f"{type(exc).__name__}: {str(exc).strip()}", "internal_error")

    # Projects
    async def list_projects(self, request: Request) -> Response:
        def work() -> Response:
            limit = _limit(request, 10)
            org = request.query_params.get("org_id")
            projects = self.neon.catalog.list_projects(
                request.query_params.get("search"), request.query_params.get("cursor"), limit
            )
            if org:
                projects = [p for p in projects if p.org_id == org]
            cursor = projects[-1].id if projects else (request.query_params.get("cursor") or "")
            return JSONResponse(
                {
                    "projects": [project_json(self.neon, p, list_item=True) for p in projects],
                    "pagination": {"cursor": cursor},
                    "applications": {},
                    "integrations": {},
                }
            )

        return await self._run(work)

    async def create_project(self, request: Request) -> Response:
        try:
            body = await json_body(request)
        except LocalNeonError as exc:
            return error(exc.status, exc.message)

        def work() -> Response:
            spec = body.get("project")
            if not isinstance(spec, dict):
                raise InvalidRequest("the request body needs a 'project' object")
            version = spec.get("pg_version")
            if version not in (None, PG_VERSION):
                raise InvalidRequest(f"pg_version {version} is not available here; this server runs {PG_VERSION}")
            branch = spec.get("branch") or {}
            created = self.neon.create_project(
                spec.get("name"),
                branch_name=branch.get("name"),
                database_name=branch.get("database_name"),
                role_name=branch.get("role_name"),
                org_id=spec.get("org_id"),
            )
            payload = {"project": project_json(self.neon, created.project), **created_json(self.neon, created)}
            return JSONResponse(payload, status_code=201)

        return await self._run(work)

    async def shared_projects(self, request: Request) -> Response:
        """Projects other accounts shared with this one: localneon has one account, so none."""

        def work() -> Response:
            _limit(request, 10)
            return JSONResponse({"projects": []})  # no pagination: there is no next page

        return await self._run(work)

    async def get_project(self, request: Request) -> Response:
        def work() -> Response:
            project = self.neon.project(request.path_params["project_id"])
            return JSONResponse({"project": project_json(self.neon, project)})

        return await self._run(work)

    async def delete_project(self, request: Request) -> Response:
        def work() -> Response:
            project = self.neon.delete_project(request.path_params["project_id"])
            return JSONResponse({"project": project_json(self.neon, project)})

        return await self._run(work)

    # Branches
    async def list_branches(self, request: Request) -> Response:
        def work() -> Response:
            project_id = request.path_params["project_id"]
            self.neon.project(project_id)
            branches = self.neon.catalog.list_branches(project_id, request.query_params.get("search"))
            sort_by = request.query_params.get("sort_by", "updated_at")
            order = request.query_params.get("sort_order", "desc")
            if sort_by not in ("name", "created_at", "updated_at"):
                raise InvalidRequest("sort_by must be name, created_at or updated_at")
            branches.sort(key=lambda x: (getattr(x, sort_by), x.id), reverse=order == "desc")
            start = _offset(request.query_params.get("cursor"))
            limit = _limit(request, 10_000, maximum=10_000)
            page = branches[start : start + limit]
            pagination: dict[str, Any] = {"sort_by": sort_by, "sort_order": order}
            if start + limit < len(branches):
                pagination["next"] = str(start + limit)
            return JSONResponse(
                {"branches": [branch_json(x) for x in page], "annotations": {}, "pagination": pagination}
            )

        return await self._run(work)

    async def create_branch(self, request: Request) -> Response:
        try:
            body = await json_body(request)
        except LocalNeonError as exc:
            return error(exc.status, exc.message)

        def work() -> Response:
            spec = body.get("branch") or {}
            if not isinstance(spec, dict):
                raise InvalidRequest("'branch' must be an object")
            if spec.get("init_source") not in (None, "parent-data"):
                raise InvalidRequest("only init_source 'parent-data' is supported here")
            created = self.neon.create_branch(
                request.path_params["project_id"],
                parent_ref=spec.get("parent_id"),
                name=spec.get("name"),
                expires_at=_time(spec.get("expires_at"), "expires_at"),
            )
            payload = created_json(self.neon, created)
            if not body.get("endpoints"):
                # Neon makes a compute only when asked; the local record exists either way.
                payload["endpoints"] = [endpoint_json(self.neon, e) for e in created.endpoints]
            return JSONResponse(payload, status_code=201)

        return await self._run(work)

    def _branch(self, request: Request) -> Branch:
        project_id = request.path_params["project_id"]
        self.neon.project(project_id)
        branch = self.neon.catalog.get_branch(project_id, request.path_params["branch_id"])
        if branch is None:
            raise NotFound(f"branch {request.path_params['branch_id']!r} not found in project {project_id}")
        return branch

    async def get_branch(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            annotation = {"object": {"type": "console/branch", "id": branch.id}, "value": {}}
            return JSONResponse({"branch": branch_json(branch), "annotation": annotation})

        return await self._run(work)

    async def delete_branch(self, request: Request) -> Response:
        def work() -> Response:
            project_id = request.path_params["project_id"]
            self.neon.project(project_id)
            if self.neon.catalog.get_branch(project_id, request.path_params["branch_id"]) is None:
                return Response(status_code=204)
            branch, ops = self.neon.delete_branch(project_id, request.path_params["branch_id"])
            return JSONResponse({"branch": branch_json(branch), "operations": [operation_json(o) for o in ops]})

        return await self._run(work)

    async def restore_branch(self, request: Request) -> Response:
        try:
            body = await json_body(request)
        except LocalNeonError as exc:
            return error(exc.status, exc.message)

        def work() -> Response:
            branch = self._branch(request)
            source = body.get("source_branch_id")
            if not source:
                raise InvalidRequest("source_branch_id is required")
            if body.get("source_lsn") or body.get("source_timestamp"):
                raise InvalidRequest("point-in-time restore (source_lsn, source_timestamp) is not available here")
            restored, ops = self.neon.restore_branch(
                branch.project_id, branch.id, source, body.get("preserve_under_name") or None
            )
            return JSONResponse({"branch": branch_json(restored), "operations": [operation_json(o) for o in ops]})

        return await self._run(work)

    async def set_default(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            updated, ops = self.neon.set_default(branch.project_id, branch.id)
            return JSONResponse({"branch": branch_json(updated), "operations": [operation_json(o) for o in ops]})

        return await self._run(work)

    async def branch_schema(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            db_name = request.query_params.get("db_name")
            if not db_name:
                raise InvalidRequest("db_name is required")
            if request.query_params.get("lsn") or request.query_params.get("timestamp"):
                raise InvalidRequest("schemas at an lsn or timestamp are not available here")
            fmt = request.query_params.get("format", "sql")
            t = self.neon.target(branch.project_id, branch.id, db_name)
            if fmt == "sql":
                return JSONResponse({"sql": self.neon.schema_dump(t)})
            if fmt == "json":
                return JSONResponse({"json": {"tables": _tables_json(self.neon, t)}})
            raise InvalidRequest("format must be sql or json")

        return await self._run(work)

    async def compare_schema(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            db_name = request.query_params.get("db_name")
            if not db_name:
                raise InvalidRequest("db_name is required")
            base = request.query_params.get("base_branch_id") or None
            return JSONResponse({"diff": schema_diff(self.neon, branch.project_id, branch.id, db_name, base)})

        return await self._run(work)

    async def branch_databases(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            return JSONResponse({"databases": [database_json(d) for d in self.neon.catalog.databases(branch.id)]})

        return await self._run(work)

    async def branch_database(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            database = self.neon.database(branch, request.path_params["database_name"])
            return JSONResponse({"database": database_json(database)})

        return await self._run(work)

    async def branch_roles(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            return JSONResponse({"roles": [role_json(self.neon.project(branch.project_id), branch.id)]})

        return await self._run(work)

    async def branch_endpoints(self, request: Request) -> Response:
        def work() -> Response:
            branch = self._branch(request)
            endpoints = self.neon.catalog.endpoints(branch.project_id, branch.id)
            return JSONResponse({"endpoints": [endpoint_json(self.neon, e) for e in endpoints]})

        return await self._run(work)

    async def restart_endpoint(self, request: Request) -> Response:
        """Neon's compute restart: every session on the endpoint's branch ends (its locks, its open
        transactions); the harness uses it to end a model's sessions before it reads main."""

        def work() -> Response:
            project = self.neon.project(request.path_params["project_id"])
            endpoint_id = request.path_params["endpoint_id"]
            endpoint = next((e for e in self.neon.catalog.endpoints(project.id) if e.id == endpoint_id), None)
            if endpoint is None:
                raise NotFound(f"endpoint {endpoint_id!r} not found in project {project.id}")
            ops = self.neon.restart_endpoint(project.id, endpoint.branch_id, endpoint.id)
            return JSONResponse(
                {"endpoint": endpoint_json(self.neon, endpoint), "operations": [operation_json(o) for o in ops]}
            )

        return await self._run(work)

    async def project_endpoints(self, request: Request) -> Response:
        def work() -> Response:
            project = self.neon.project(request.path_params["project_id"])
            endpoints = self.neon.catalog.endpoints(project.id)
            return JSONResponse({"endpoints": [endpoint_json(self.neon, e) for e in endpoints]})

        return await self._run(work)

    async def connection_uri(self, request: Request) -> Response:
        def work() -> Response:
            q = request.query_params
            project_id = request.path_params["project_id"]
            if not q.get("database_name") or not q.get("role_name"):
                raise InvalidRequest("database_name and role_name are required")
            branch_ref = q.get("branch_id")
            endpoint_id = q.get("endpoint_id")
            if endpoint_id and not branch_ref:
                matches = [e for e in self.neon.catalog.endpoints(project_id) if e.id == endpoint_id]
                if not matches:
                    raise NotFound(f"endpoint {endpoint_id!r} not found in project {project_id}")
                branch_ref = matches[0].branch_id
            t = self.neon.target(project_id, branch_ref or None, q["database_name"])
            if not role_matches(t.project, q["role_name"]):
                raise NotFound(f"role {q['role_name']!r} not found; the project's role is {t.project.role_name}")
            return JSONResponse({"uri": self.neon.uri(t)})

        return await self._run(work)

    async def list_operations(self, request: Request) -> Response:
        def work() -> Response:
            project = self.neon.project(request.path_params["project_id"])
            start = _offset(request.query_params.get("cursor"))
            limit = _limit(request, 10, maximum=1000)
            ops = self.neon.catalog.list_operations(project.id, start, limit)
            return JSONResponse(
                {"operations": [operation_json(o) for o in ops], "pagination": {"cursor": str(start + len(ops))}}
            )

        return await self._run(work)

    async def get_operation(self, request: Request) -> Response:
        def work() -> Response:
            project = self.neon.project(request.path_params["project_id"])
            op = self.neon.catalog.get_operation(project.id, request.path_params["operation_id"])
            if op is None:
                raise NotFound(f"operation {request.path_params['operation_id']!r} not found")
            return JSONResponse({"operation": operation_json(op)})

        return await self._run(work)


def _tables_json(neon: Neon, t: Target) -> list[dict[str, Any]]:
    from localneon import sql

    conninfo = neon.role_conninfo(t)
    tables = []
    for row in sql.list_tables(conninfo):
        info = sql.describe_table(conninfo, f'"{row["schema"]}"."{row["table_name"]}"')
        columns = [{"name": c["name"], "type": c["type"]} for c in (info or {}).get("columns", [])]
        tables.append({"schema": row["schema"], "name": row["table_name"], "columns": columns})
    return tables
