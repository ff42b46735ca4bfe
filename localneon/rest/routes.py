"""A Neon-shaped REST API (``/api/v2``) over the same engine the MCP tools use: every route, in one table.

Paths, fields and status codes follow Neon's API v2 so that a client written for Neon's cloud
(an eval harness creating sandboxes, loading fixtures, dumping schemas) works unchanged. Each row of
``ROUTES`` names a method, a path and a function of one ``Call`` (``localneon.rest.call``); ``mount``
makes them Starlette routes that run the function in the thread pool and answer a
``LocalNeonError`` (or any other failure) with Neon's error body.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from localneon.engine.branching import Neon
from localneon.engine.errors import LocalNeonError
from localneon.rest import account, branches, neon_auth, neon_auth_settings, projects
from localneon.rest.bodies import error
from localneon.rest.call import Call

Answer = Callable[[Call], Response]


@dataclass(frozen=True)
class RestRoute:
    method: str
    path: str
    answer: Answer


def _get(path: str, answer: Answer) -> RestRoute:
    return RestRoute("GET", path, answer)


def _post(path: str, answer: Answer) -> RestRoute:
    return RestRoute("POST", path, answer)


def _patch(path: str, answer: Answer) -> RestRoute:
    return RestRoute("PATCH", path, answer)


def _delete(path: str, answer: Answer) -> RestRoute:
    return RestRoute("DELETE", path, answer)


P = "/projects/{project_id}"
B = P + "/branches/{branch_id}"
AUTH = neon_auth.PATH

ROUTES: tuple[RestRoute, ...] = (
    # Who the key belongs to
    _get("/auth", account.auth_details),
    _get("/users/me", account.current_user),
    _get("/users/me/organizations", account.user_organizations),
    _get("/organizations/{org_id}", account.organization),
    _get("/organizations/{org_id}/members", account.organization_members),
    # Projects
    _get("/projects", projects.list_projects),
    _get("/projects/shared", projects.shared_projects),  # before {project_id}
    _post("/projects", projects.create_project),
    _get(P, projects.get_project),
    _delete(P, projects.delete_project),
    # Branches
    _get(P + "/branches", branches.list_branches),
    _post(P + "/branches", branches.create_branch),
    _get(B, branches.get_branch),
    _delete(B, branches.delete_branch),
    _post(B + "/restore", branches.restore_branch),
    _post(B + "/set_as_default", branches.set_default),
    _get(B + "/schema", branches.branch_schema),
    _get(B + "/compare_schema", branches.compare_schema),
    _get(B + "/databases", branches.branch_databases),
    _post(B + "/databases", branches.create_database),
    _get(B + "/databases/{database_name}", branches.branch_database),
    _delete(B + "/databases/{database_name}", branches.delete_database),
    _get(B + "/roles", branches.branch_roles),
    _get(B + "/endpoints", branches.branch_endpoints),
    # Endpoints, connection URIs, operations
    _get(P + "/endpoints", projects.project_endpoints),
    _post(P + "/endpoints/{endpoint_id}/restart", projects.restart_endpoint),
    _get(P + "/connection_uri", projects.connection_uri),
    _get(P + "/operations", projects.list_operations),
    _get(P + "/operations/{operation_id}", projects.get_operation),
    # Neon Auth
    _get(AUTH, neon_auth.get_auth),
    _post(AUTH, neon_auth.create_auth),
    *(_get(f"{AUTH}/{part}", partial(neon_auth.settings_part, part=part)) for part in neon_auth.SETTINGS_PARTS),
    _patch(AUTH + "/allow_localhost", neon_auth_settings.allow_localhost),
    _post(AUTH + "/domains", neon_auth_settings.add_domain),
    _delete(AUTH + "/domains", neon_auth_settings.delete_domains),
    _post(AUTH + "/oauth_providers", neon_auth_settings.add_oauth),
    _patch(AUTH + "/oauth_providers/{provider_id}", neon_auth_settings.update_oauth),
    _delete(AUTH + "/oauth_providers/{provider_id}", neon_auth_settings.delete_oauth),
    _patch(AUTH + "/email_and_password", neon_auth_settings.email_and_password),
    _patch(AUTH + "/email_provider", neon_auth_settings.email_provider),
    _post(AUTH + "/send_test_email", neon_auth_settings.send_test_email),
)


def _handler(neon: Neon, answer: Answer) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        call = Call(neon, request, await request.body())
        try:
            return await run_in_threadpool(answer, call)
        except LocalNeonError as exc:
            return error(exc.status, exc.message, exc.code)
        except Exception as exc:
            # An unexpected failure (PostgreSQL refused, a bug): the client gets the real reason in
            # Neon's error body, not a bare "Internal Server Error"; the traceback goes to stderr.
            traceback.print_exc(file=sys.stderr)
            return error(500, f"{type(exc).__name__}: {str(exc).strip()}", "internal_error")

    return handle


def mount(neon: Neon) -> list[Route]:
    """``ROUTES`` as Starlette routes working on ``neon`` (mounted at ``/api/v2``)."""
    return [Route(r.path, _handler(neon, r.answer), methods=[r.method]) for r in ROUTES]
