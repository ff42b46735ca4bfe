"""Neon Auth over REST: ``GET`` and ``POST /projects/{project_id}/branches/{branch_id}/auth``.

What Neon's ``@neon/sdk`` calls (``neon.auth.get`` / ``neon.auth.create``) and Neon's MCP server's
Neon Auth tools start from: ``GET`` answers ``NeonAuthIntegration`` (404 when the branch has none),
``POST`` takes ``EnableNeonAuthIntegrationRequest`` (``auth_provider``, optional ``database_name``)
and answers 201 ``NeonAuthCreateIntegrationResponse``, or 409 when the branch already has one.
``GET .../auth/{domains,allow_localhost,email_and_password,oauth_providers,email_provider}`` answer
the settings the way Neon splits them (secrets redacted); the calls that change them are in
``localneon.api_auth_settings``.
The state is the catalog's, shared with the MCP tools (``localneon.neon_auth``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from localneon import neon_auth
from localneon.api_auth_settings import auth_settings_routes
from localneon.api_json import error, json_body
from localneon.errors import InvalidRequest, LocalNeonError, NotFound

if TYPE_CHECKING:
    from localneon.api import Api

PATH = "/projects/{project_id}/branches/{branch_id}/auth"
# Read-only views of the settings, as Neon's get_neon_auth_config reads them (one call each).
SETTINGS_PARTS = ("domains", "allow_localhost", "email_and_password", "oauth_providers", "email_provider")


def auth_routes(api: Api) -> list[Route]:
    """The Neon Auth routes, run like every other route of ``api`` (errors in Neon's body)."""

    async def get_auth(request: Request) -> Response:
        def work() -> Response:
            branch = api._branch(request)
            _, found = neon_auth.find(api.neon, branch.project_id, branch.id)
            if found is None:
                raise NotFound(f"Neon Auth is not enabled for branch {branch.id}")
            return JSONResponse(found.integration_json())

        return await api._run(work)

    async def create_auth(request: Request) -> Response:
        try:
            body = await json_body(request)
        except LocalNeonError as exc:  # a body that is not a JSON object: Neon's 400, not a bare 500
            return error(exc.status, exc.message, exc.code)

        def work() -> Response:
            branch = api._branch(request)
            provider = body.get("auth_provider")
            if not isinstance(provider, str) or not provider:
                raise InvalidRequest("auth_provider is required (supported here: better_auth)")
            database = body.get("database_name")
            if database is not None and not isinstance(database, str):
                raise InvalidRequest("database_name must be a string")
            found, created = neon_auth.provision(api.neon, branch.project_id, branch.id, database or None, provider)
            if not created:
                return error(409, f"Neon Auth is already enabled for branch {branch.id}")
            return JSONResponse(found.created_json(), status_code=201)

        return await api._run(work)

    def settings_view(part: str) -> Callable[[Request], Awaitable[Response]]:
        async def get_part(request: Request) -> Response:
            def work() -> Response:
                branch = api._branch(request)
                _, found = neon_auth.find(api.neon, branch.project_id, branch.id)
                if found is None:
                    raise NotFound(f"Neon Auth is not enabled for branch {branch.id}")
                return JSONResponse(neon_auth.rest_views(found.settings)[part])

            return await api._run(work)

        return get_part

    return [
        Route(PATH, get_auth, methods=["GET"]),
        Route(PATH, create_auth, methods=["POST"]),
        *(Route(f"{PATH}/{part}", settings_view(part), methods=["GET"]) for part in SETTINGS_PARTS),
        *auth_settings_routes(api),
    ]
