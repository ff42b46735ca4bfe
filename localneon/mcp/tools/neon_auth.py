"""Neon Auth tools (provision, configure, read) and the Data API tool, with Neon's schemas and annotations.

The state behind them is ``localneon.engine.neon_auth``; the Data API (PostgREST over HTTP) has no local
counterpart, so its tool checks its arguments and the branch, then says so without changing anything.
"""

from __future__ import annotations

from typing import Any

from localneon.engine import neon_auth
from localneon.engine.branching import Neon
from localneon.engine.errors import InvalidRequest, LocalNeonError, NotFound
from localneon.mcp.tools import Param, ToolSpec, boolean, string
from localneon.mcp.tools.common import PROJECT_ID, pg_errors, to_json

BRANCH = Param("branchId", string())
DATABASE = Param("databaseName", string())


def _strict(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


_SMTP = {
    "host": string(minLength=1),
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "username": string(minLength=1),
    "password": string(minLength=1),
    "sender_email": string(format="email"),
    "sender_name": string(minLength=1),
}
_EMAIL_PASSWORD = _strict(
    {
        **{name: boolean() for name in neon_auth.EMAIL_PASSWORD_FIELDS if name != "email_verification_method"},
        "email_verification_method": string(enum=list(neon_auth.VERIFICATION_METHODS)),
    }
)
_EMAIL_PROVIDER = {
    "anyOf": [
        _strict({"type": string(const="standard"), **_SMTP}, ("type", *_SMTP)),
        _strict(
            {
                "type": string(const="shared"),
                "sender_email": string(format="email"),
                "sender_name": string(minLength=1),
            },
            ("type",),
        ),
    ]
}
CONFIGURE_PARAMS = (
    Param("operation", string(enum=list(neon_auth.OPERATIONS)), required=True),
    PROJECT_ID,
    BRANCH,
    Param("trusted_origin", string(minLength=1)),
    Param("allow_localhost", boolean()),
    Param("methods", _strict({"email_password": _EMAIL_PASSWORD})),
    Param("oauth_provider", string(enum=list(neon_auth.OAUTH_PROVIDERS))),
    Param(
        "oauth_provider_config",
        _strict(
            {
                "client_id": string(minLength=1),
                "client_secret": string(minLength=1),
                "microsoft_tenant_id": string(minLength=1),
            }
        ),
    ),
    Param("email_provider", _EMAIL_PROVIDER),
    Param(
        "test_email",
        _strict(
            {"recipient_email": string(format="email", minLength=1, maxLength=256), **_SMTP},
            ("recipient_email", *_SMTP),
        ),
    ),
)


def _urls(found: neon_auth.Integration) -> str:
    return (
        f"Auth URL (base_url): {found.base_url}\n"
        f"JWKS URL: {found.jwks_url}\n"
        "Note: this local server runs no auth service; these URLs (under .invalid) are not served. "
        f"The {neon_auth.SCHEMA} schema and the settings are real and can be read and changed."
    )


def provision_neon_auth(neon: Neon, args: dict[str, Any]) -> str:
    project_id = args["projectId"]
    target = neon.target(project_id, args.get("branchId") or None, args.get("databaseName") or None)
    with pg_errors("provision_neon_auth", target):
        found, created = neon_auth.provision(neon, project_id, target.branch.id, target.database.name)
    if not created:
        return (
            f"Neon Auth is already provisioned for branch {found.branch_id} (database {found.database_name}).\n"
            + _urls(found)
        )
    return (
        f"Provisioned Neon Auth for branch {found.branch_id} of project {project_id}: the {neon_auth.SCHEMA} schema "
        f"(tables user, session, account, verification) now exists in database {found.database_name}.\n" + _urls(found)
    )


def get_neon_auth_config(neon: Neon, args: dict[str, Any]) -> str:
    target, found = neon_auth.require(neon, args["projectId"], args.get("branchId") or None)
    body = {
        "project_id": found.project_id,
        "branch_id": found.branch_id,
        "branch_name": target.branch.name,
        "base_url": found.base_url,
        "jwks_url": found.jwks_url,
        "db_name": found.database_name,
        "integration": found.integration_json(),
        **neon_auth.snapshot(found.settings),
    }
    return "Neon Auth configuration:\n" + to_json(body)


def configure_neon_auth(neon: Neon, args: dict[str, Any]) -> str:
    project_id = args["projectId"]
    target, _found = neon_auth.require(neon, project_id, args.get("branchId") or None)
    if args["operation"] == "send_test_email":
        if not args.get("test_email"):
            raise InvalidRequest("test_email is required for operation send_test_email")
        raise LocalNeonError(
            "send_test_email: this local server sends no email (it has no mail relay), so the SMTP "
            "credentials were not tested; nothing was saved or changed"
        )
    summary: list[str] = []

    def change(settings: dict[str, Any]) -> dict[str, Any]:
        new, said = neon_auth.configure(settings, args)
        summary.append(said)
        return new

    settings = neon.catalog.modify_neon_auth(project_id, target.branch.id, change)
    if settings is None:  # the branch went away between the check and the change
        raise NotFound(f"Neon Auth is no longer provisioned for branch {target.branch.id}; nothing was changed")
    return f"{summary[0]} (branch {target.branch.id})\nNeon Auth settings now:\n" + to_json(
        neon_auth.snapshot(settings)
    )


def provision_neon_data_api(neon: Neon, args: dict[str, Any]) -> str:
    project_id = args["projectId"]
    target = neon.target(project_id, args.get("branchId") or None, args.get("databaseName") or None)
    provider = args.get("authProvider")
    if provider == "external" and not args.get("jwksUrl"):
        raise InvalidRequest('jwksUrl is required when authProvider is "external"')
    _, auth = neon_auth.find(neon, project_id, target.branch.id)
    state = "provisioned" if auth else "not provisioned"
    raise LocalNeonError(
        f"this local server has no Data API service (Neon's PostgREST-compatible HTTP API), so it cannot "
        f"provision one for database {target.database.name} on branch {target.branch.id}; nothing was changed "
        f"(Neon Auth is {state} on this branch). Query the database with run_sql instead."
    )


TOOLS = [
    ToolSpec(
        "provision_neon_auth",
        (PROJECT_ID, BRANCH, DATABASE),
        provision_neon_auth,
        idempotent=True,
        title="Provision Neon Auth",
        category="neon_auth",
        read_only_safe=False,
    ),
    ToolSpec(
        "configure_neon_auth",
        CONFIGURE_PARAMS,
        configure_neon_auth,
        destructive=True,
        title="Configure Neon Auth",
        category="neon_auth",
        read_only_safe=False,
    ),
    ToolSpec(
        "get_neon_auth_config",
        (PROJECT_ID, BRANCH),
        get_neon_auth_config,
        read_only=True,
        idempotent=True,
        title="Get Neon Auth configuration",
        category="neon_auth",
        read_only_safe=True,
    ),
    ToolSpec(
        "provision_neon_data_api",
        (
            PROJECT_ID,
            BRANCH,
            DATABASE,
            Param("authProvider", string(enum=["neon_auth", "external", "none"])),
            Param("jwksUrl", string()),
            Param("providerName", string()),
            Param("jwtAudience", string()),
            Param("provisionNeonAuthFirst", boolean()),
        ),
        provision_neon_data_api,
        idempotent=True,
        title="Provision Neon Data API",
        category="data_api",
        read_only_safe=False,
    ),
]
