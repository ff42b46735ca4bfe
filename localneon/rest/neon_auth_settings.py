"""Changing a branch's Neon Auth settings over REST, as Neon's ``@neon/sdk`` sends the changes.

Neon's hosted server (its repository's HEAD) runs every ``configure_neon_auth`` operation as one of
these calls; the paths, bodies and answers are those of ``@neon/sdk`` 1.4.0's generated client
(``types.gen.d.ts``: Neon's OpenAPI document of October 2025 has no branch-level Neon Auth):

- ``PATCH .../auth/allow_localhost`` ``{allow_localhost}`` -> 200 ``NeonAuthAllowLocalhostResponse``
- ``POST`` / ``DELETE .../auth/domains`` ``{domain, auth_provider}`` / ``{auth_provider, domains: [{domain}]}``
  -> 201 / 200 (a batch delete of an origin not listed is 200, as on Neon)
- ``POST .../auth/oauth_providers`` ``NeonAuthAddOAuthProviderRequest`` -> 200 ``NeonAuthOauthProvider``;
  ``PATCH`` / ``DELETE .../auth/oauth_providers/{id}`` -> 200
- ``PATCH .../auth/email_and_password`` ``NeonAuthEmailAndPasswordConfigUpdate`` -> 200 the whole config
- ``PATCH .../auth/email_provider`` ``NeonAuthEmailServerConfig`` -> 200 the config (password redacted)
- ``POST .../auth/send_test_email`` -> 200 ``{success: false, error_message}``: no mail relay here

Each is translated to the operation the twin's own MCP tool applies (``neon_auth.configure``), so
both change the same catalog row the same way; a bad body is 400 naming the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import JSONResponse, Response

from localneon.engine import neon_auth
from localneon.engine.errors import InvalidRequest, NotFound
from localneon.rest.call import Call

# NeonAuthEmailAndPasswordConfigUpdate's field -> the twin's setting (disable_sign_up is inverted).
EMAIL_PASSWORD_REST = {
    "enabled": "enabled",
    "email_verification_method": "email_verification_method",
    "require_email_verification": "require_email_verification",
    "auto_sign_in_after_verification": "auto_sign_in_after_verification",
    "send_verification_email_on_sign_up": "verify_email_on_sign_up",
    "send_verification_email_on_sign_in": "verify_email_on_sign_in",
    "disable_sign_up": "allow_sign_up",
}
OAUTH_FIELDS = ("client_id", "client_secret", "microsoft_tenant_id")
STANDARD_EMAIL_FIELDS = ("host", "port", "username", "password", "sender_email", "sender_name")
JSON_TYPES = {bool: "a boolean", str: "a string", int: "an integer"}
NO_MAIL = (
    "this local server sends no email (it has no mail relay), so the SMTP credentials were not tested; "
    "nothing was saved or changed"
)


def _only(body: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise InvalidRequest(f"{what}: unknown field(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})")


def _typed(body: dict[str, Any], field: str, kind: type, what: str, *, required: bool = True) -> Any:
    value = body.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidRequest(f"{what}: {field} must be {JSON_TYPES[kind]}, got {value!r}")
    return value


def _provider_body(settings: dict[str, Any], provider_id: str) -> dict[str, Any]:
    providers = neon_auth.rest_views(settings)["oauth_providers"]["providers"]
    found = next((p for p in providers if p["id"] == provider_id), None)
    if found is None:  # cannot happen right after a successful add or update
        raise NotFound(f"OAuth provider {provider_id} is not configured")
    return dict(found)


def _email_password_args(body: dict[str, Any]) -> dict[str, Any]:
    what = "email_and_password"
    _only(body, tuple(EMAIL_PASSWORD_REST), what)
    changes: dict[str, Any] = {}
    for field, setting in EMAIL_PASSWORD_REST.items():
        if field not in body or body[field] is None:
            continue
        if field == "email_verification_method":
            if body[field] not in neon_auth.VERIFICATION_METHODS:
                raise InvalidRequest(
                    f"{what}: {field} must be one of {', '.join(neon_auth.VERIFICATION_METHODS)}, got {body[field]!r}"
                )
            changes[setting] = body[field]
            continue
        value = _typed(body, field, bool, what)
        changes[setting] = not value if field == "disable_sign_up" else value
    if not changes:
        raise InvalidRequest(f"{what}: set at least one of {', '.join(EMAIL_PASSWORD_REST)}")
    return {"operation": "update_auth_methods", "methods": {"email_password": changes}}


def _email_provider_args(body: dict[str, Any]) -> dict[str, Any]:
    what = "email_provider"
    kind = body.get("type")
    if kind == "shared":
        _only(body, ("type", "sender_email", "sender_name"), what)
        for field in ("sender_email", "sender_name"):
            _typed(body, field, str, what, required=False)
    elif kind == "standard":
        _only(body, ("type", *STANDARD_EMAIL_FIELDS), what)
        for field in STANDARD_EMAIL_FIELDS:
            _typed(body, field, int if field == "port" else str, what)
    else:
        raise InvalidRequest(f"{what}: type must be 'standard' or 'shared', got {kind!r}")
    return {"operation": "update_email_provider", "email_provider": dict(body)}


def _test_email_problem(body: dict[str, Any]) -> None:
    what = "send_test_email"
    _only(body, ("recipient_email", *STANDARD_EMAIL_FIELDS), what)
    for field in ("recipient_email", *STANDARD_EMAIL_FIELDS):
        _typed(body, field, int if field == "port" else str, what)


def _change(call: Call, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Apply ``edit`` to the branch's settings under the catalog's row lock; the new settings."""
    branch = call.branch()
    neon_auth.require(call.neon, branch.project_id, branch.id)
    settings = call.neon.catalog.modify_neon_auth(branch.project_id, branch.id, edit)
    if settings is None:  # the branch went away between the check and the change
        raise NotFound(f"Neon Auth is no longer provisioned for branch {branch.id}; nothing was changed")
    return settings


def _apply(call: Call, args: dict[str, Any]) -> dict[str, Any]:
    """Run one operation of the twin's configure_neon_auth tool on the branch's settings."""
    return _change(call, lambda current: neon_auth.configure(current, args)[0])


def _oauth_id(call: Call) -> str:
    provider = call.path("provider_id")
    if provider not in neon_auth.OAUTH_PROVIDERS:
        raise InvalidRequest(f"oauth provider id must be one of {', '.join(neon_auth.OAUTH_PROVIDERS)}")
    return provider


def allow_localhost(call: Call) -> Response:
    body = call.body()
    _only(body, ("allow_localhost",), "allow_localhost")
    value = _typed(body, "allow_localhost", bool, "allow_localhost")
    settings = _apply(call, {"operation": "set_allow_localhost", "allow_localhost": value})
    return JSONResponse(neon_auth.rest_views(settings)["allow_localhost"])


def add_domain(call: Call) -> Response:
    body = call.body()
    _only(body, ("domain", "auth_provider"), "domains")
    domain = _typed(body, "domain", str, "domains")
    if body.get("auth_provider", neon_auth.PROVIDER) != neon_auth.PROVIDER:
        raise InvalidRequest(f"domains: auth_provider must be {neon_auth.PROVIDER!r}")
    settings = _apply(call, {"operation": "add_trusted_origin", "trusted_origin": domain})
    return JSONResponse(neon_auth.rest_views(settings)["domains"], status_code=201)


def delete_domains(call: Call) -> Response:
    body = call.body()
    _only(body, ("domains", "auth_provider"), "domains")
    entries = body.get("domains")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("domain"), str) for e in entries
    ):
        raise InvalidRequest("domains: domains must be a list of {domain: string} objects")
    unwanted = {entry["domain"] for entry in entries}

    def drop(current: dict[str, Any]) -> dict[str, Any]:  # Neon's batch delete skips origins it does not list
        return {**current, "trusted_origins": [o for o in current["trusted_origins"] if o not in unwanted]}

    return JSONResponse(neon_auth.rest_views(_change(call, drop))["domains"])


def add_oauth(call: Call) -> Response:
    body = call.body()
    _only(body, ("id", *OAUTH_FIELDS), "oauth_providers")
    provider = _typed(body, "id", str, "oauth_providers")
    if provider not in neon_auth.OAUTH_PROVIDERS:
        raise InvalidRequest(f"oauth_providers: id must be one of {', '.join(neon_auth.OAUTH_PROVIDERS)}")
    config = {f: _typed(body, f, str, "oauth_providers", required=False) for f in OAUTH_FIELDS}
    args = {"operation": "add_oauth_provider", "oauth_provider": provider, "oauth_provider_config": config}
    return JSONResponse(_provider_body(_apply(call, args), provider))


def update_oauth(call: Call) -> Response:
    body = call.body()
    provider = _oauth_id(call)
    _only(body, OAUTH_FIELDS, "oauth_providers")
    config = {f: _typed(body, f, str, "oauth_providers", required=False) for f in OAUTH_FIELDS}
    args = {"operation": "update_oauth_provider", "oauth_provider": provider, "oauth_provider_config": config}
    return JSONResponse(_provider_body(_apply(call, args), provider))


def delete_oauth(call: Call) -> Response:
    """No body is read: Neon's client sends none."""
    provider = _oauth_id(call)
    _apply(call, {"operation": "remove_oauth_provider", "oauth_provider": provider})
    return JSONResponse({})


def email_and_password(call: Call) -> Response:
    settings = _apply(call, _email_password_args(call.body()))
    return JSONResponse(neon_auth.rest_views(settings)["email_and_password"])


def email_provider(call: Call) -> Response:
    settings = _apply(call, _email_provider_args(call.body()))
    return JSONResponse(neon_auth.rest_views(settings)["email_provider"])


def send_test_email(call: Call) -> Response:
    _test_email_problem(call.body())
    branch = call.branch()
    neon_auth.require(call.neon, branch.project_id, branch.id)
    return JSONResponse({"success": False, "error_message": NO_MAIL})
