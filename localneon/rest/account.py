"""Who the API key belongs to: ``/auth``, ``/users/me``, the organization and its members.

Neon's own MCP servers ask these before anything else (``GET /auth`` and ``GET /users/me`` decide
whether they start at all; ``GET /organizations/{id}`` is where ``list_projects`` and ``search``
find the projects). localneon has one account: a personal user, member (admin) of the one local
organization that owns every project. Shapes follow Neon's OpenAPI schemas ``AuthDetailsResponse``,
``CurrentUserInfoResponse``, ``Organization`` and ``OrganizationMembersResponse``.
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.responses import JSONResponse, Response

from localneon.engine.catalog import LOCAL_ORG_ID, LOCAL_ORG_NAME, iso
from localneon.engine.errors import NotFound
from localneon.rest.bodies import EPOCH
from localneon.rest.call import Call

LOCAL_USER_ID = str(uuid.uuid5(uuid.NAMESPACE_DNS, "user.localneon"))
LOCAL_MEMBER_ID = str(uuid.uuid5(uuid.NAMESPACE_DNS, "member.localneon"))
LOCAL_EMAIL = "local@localneon.example"
PROJECTS_LIMIT = 1000
BRANCHES_LIMIT = 5000


def organization_json() -> dict[str, Any]:
    return {
        "id": LOCAL_ORG_ID,
        "name": LOCAL_ORG_NAME,
        "handle": LOCAL_ORG_NAME,
        "plan": "local",
        "managed_by": "localneon",
        "created_at": iso(EPOCH),
        "updated_at": iso(EPOCH),
    }


def user_json() -> dict[str, Any]:
    return {
        "id": LOCAL_USER_ID,
        "email": LOCAL_EMAIL,
        "login": LOCAL_EMAIL,
        "name": "Local",
        "last_name": "User",
        "image": "",
        "active_seconds_limit": 0,
        "projects_limit": PROJECTS_LIMIT,
        "branches_limit": BRANCHES_LIMIT,
        "max_autoscaling_limit": 0.25,
        "auth_accounts": [
            {"provider": "hasura", "email": LOCAL_EMAIL, "name": "Local User", "login": LOCAL_EMAIL, "image": ""}
        ],
        "plan": "local",
    }


def _local_organization(call: Call) -> None:
    org_id = call.path("org_id")
    if org_id != LOCAL_ORG_ID:
        raise NotFound(f"organization {org_id!r} not found (the only local organization is {LOCAL_ORG_ID})")


def auth_details(call: Call) -> Response:
    """A personal API key: the account is the local user."""
    return JSONResponse({"account_id": LOCAL_USER_ID, "auth_method": "api_key_user"})


def current_user(call: Call) -> Response:
    return JSONResponse(user_json())


def user_organizations(call: Call) -> Response:
    return JSONResponse({"organizations": [organization_json()]})


def organization(call: Call) -> Response:
    _local_organization(call)
    return JSONResponse(organization_json())


def organization_members(call: Call) -> Response:
    _local_organization(call)
    member = {
        "id": LOCAL_MEMBER_ID,
        "user_id": LOCAL_USER_ID,
        "org_id": LOCAL_ORG_ID,
        "role": "admin",
        "joined_at": iso(EPOCH),
    }
    return JSONResponse({"members": [{"member": member, "user": {"email": LOCAL_EMAIL}}]})
