"""Neon Auth over REST: ``GET`` and ``POST /projects/{project_id}/branches/{branch_id}/auth``.

What Neon's ``@neon/sdk`` calls (``neon.auth.get`` / ``neon.auth.create``) and Neon's MCP server's
Neon Auth tools start from: ``GET`` answers ``NeonAuthIntegration`` (404 when the branch has none),
``POST`` takes ``EnableNeonAuthIntegrationRequest`` (``auth_provider``, optional ``database_name``)
and answers 201 ``NeonAuthCreateIntegrationResponse``, or 409 when the branch already has one.
``GET .../auth/{domains,allow_localhost,email_and_password,oauth_providers,email_provider}`` answer
the settings the way Neon splits them (secrets redacted); the calls that change them are in
``localneon.rest.neon_auth_settings``.
The state is the catalog's, shared with the MCP tools (``localneon.engine.neon_auth``).
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from localneon.engine import neon_auth
from localneon.engine.errors import Conflict, InvalidRequest, NotFound
from localneon.rest.call import Call

PATH = "/projects/{project_id}/branches/{branch_id}/auth"
# Read-only views of the settings, as Neon's get_neon_auth_config reads them (one call each).
SETTINGS_PARTS = ("domains", "allow_localhost", "email_and_password", "oauth_providers", "email_provider")


def _integration(call: Call) -> neon_auth.Integration:
    branch = call.branch()
    _, found = neon_auth.find(call.neon, branch.project_id, branch.id)
    if found is None:
        raise NotFound(f"Neon Auth is not enabled for branch {branch.id}")
    return found


def get_auth(call: Call) -> Response:
    return JSONResponse(_integration(call).integration_json())


def create_auth(call: Call) -> Response:
    body = call.body()  # a body that is not a JSON object: Neon's 400, not a bare 500
    branch = call.branch()
    provider = body.get("auth_provider")
    if not isinstance(provider, str) or not provider:
        raise InvalidRequest("auth_provider is required (supported here: better_auth)")
    database = body.get("database_name")
    if database is not None and not isinstance(database, str):
        raise InvalidRequest("database_name must be a string")
    found, created = neon_auth.provision(call.neon, branch.project_id, branch.id, database or None, provider)
    if not created:
        raise Conflict(f"Neon Auth is already enabled for branch {branch.id}")
    return JSONResponse(found.created_json(), status_code=201)


def settings_part(call: Call, part: str) -> Response:
    """One of ``SETTINGS_PARTS``, secrets redacted (the table binds ``part`` for each path)."""
    return JSONResponse(neon_auth.rest_views(_integration(call).settings)[part])
