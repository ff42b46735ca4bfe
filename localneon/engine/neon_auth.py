"""Neon Auth on the local twin: one integration per branch, its settings in the catalog.

Neon Auth is a managed Better Auth service: provisioning creates the ``neon_auth`` schema in the
branch database and an auth service with its own URL. Locally the schema is real (Better Auth's
core tables, so a migration or a query against them works), the integration and its settings
(trusted origins, localhost, email and password, OAuth providers, email server) are catalog rows,
and no auth service runs: the URLs handed out are under ``.invalid`` (a name that never resolves),
so nothing pretends to serve them. Secrets (OAuth client secrets, SMTP passwords) are never kept:
the settings record only that one was given, and every reader sees ``***redacted***``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from localneon.engine import ids, sql
from localneon.engine.branching import Neon, Target
from localneon.engine.catalog import iso
from localneon.engine.errors import InvalidRequest, NotFound

PROVIDER = "better_auth"
SCHEMA = "neon_auth"
AUTH_HOST = "neonauth.localneon.invalid"
REDACTED = "***redacted***"
OAUTH_PROVIDERS = ("google", "github", "microsoft", "vercel")
VERIFICATION_METHODS = ("link", "otp")
OPERATIONS = (
    "add_trusted_origin",
    "remove_trusted_origin",
    "set_allow_localhost",
    "update_auth_methods",
    "add_oauth_provider",
    "update_oauth_provider",
    "remove_oauth_provider",
    "update_email_provider",
    "send_test_email",
)
EMAIL_PASSWORD_FIELDS = (
    "enabled",
    "allow_sign_up",
    "verify_email_on_sign_up",
    "verify_email_on_sign_in",
    "email_verification_method",
    "require_email_verification",
    "auto_sign_in_after_verification",
)

# Better Auth's core tables (user, session, account, verification), as the auth service would create them.
_TABLES = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE IF NOT EXISTS {SCHEMA}."user" (
    id text PRIMARY KEY, name text NOT NULL, email text NOT NULL UNIQUE,
    "emailVerified" boolean NOT NULL DEFAULT false, image text,
    "createdAt" timestamptz NOT NULL DEFAULT now(), "updatedAt" timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {SCHEMA}.session (
    id text PRIMARY KEY, "expiresAt" timestamptz NOT NULL, token text NOT NULL UNIQUE,
    "createdAt" timestamptz NOT NULL DEFAULT now(), "updatedAt" timestamptz NOT NULL DEFAULT now(),
    "ipAddress" text, "userAgent" text,
    "userId" text NOT NULL REFERENCES {SCHEMA}."user"(id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS {SCHEMA}.account (
    id text PRIMARY KEY, "accountId" text NOT NULL, "providerId" text NOT NULL,
    "userId" text NOT NULL REFERENCES {SCHEMA}."user"(id) ON DELETE CASCADE,
    "accessToken" text, "refreshToken" text, "idToken" text, "accessTokenExpiresAt" timestamptz,
    "refreshTokenExpiresAt" timestamptz, scope text, password text,
    "createdAt" timestamptz NOT NULL DEFAULT now(), "updatedAt" timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {SCHEMA}.verification (
    id text PRIMARY KEY, identifier text NOT NULL, value text NOT NULL, "expiresAt" timestamptz NOT NULL,
    "createdAt" timestamptz NOT NULL DEFAULT now(), "updatedAt" timestamptz NOT NULL DEFAULT now()
);
"""


def default_settings() -> dict[str, Any]:
    """A new integration's settings: email and password on, Google and GitHub with shared credentials."""
    return {
        "trusted_origins": [],
        "allow_localhost": True,
        "email_password": {
            "enabled": True,
            "allow_sign_up": True,
            "verify_email_on_sign_up": False,
            "verify_email_on_sign_in": False,
            "email_verification_method": "otp",
            "require_email_verification": False,
            "auto_sign_in_after_verification": True,
        },
        "oauth_providers": [
            {"id": "google", "type": "shared", "client_id": None, "secret_set": False},
            {"id": "github", "type": "shared", "client_id": None, "secret_set": False},
        ],
        "email_provider": {"type": "shared", "sender_email": None, "sender_name": None},
    }


@dataclass(frozen=True)
class Integration:
    """One branch's Neon Auth integration, as the catalog holds it."""

    project_id: str
    branch_id: str
    database_name: str
    auth_provider_project_id: str
    created_at: Any
    settings: dict[str, Any]

    @property
    def base_url(self) -> str:
        return f"https://{self.branch_id}.{AUTH_HOST}/{self.database_name}/auth"

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/.well-known/jwks.json"

    def integration_json(self) -> dict[str, Any]:
        """Neon's ``NeonAuthIntegration`` (what ``GET .../branches/{b}/auth`` returns)."""
        return {
            "auth_provider": PROVIDER,
            "auth_provider_project_id": self.auth_provider_project_id,
            "branch_id": self.branch_id,
            "db_name": self.database_name,
            "created_at": iso(self.created_at),
            "owned_by": "neon",
            "jwks_url": self.jwks_url,
            "base_url": self.base_url,
        }

    def created_json(self) -> dict[str, Any]:
        """Neon's ``NeonAuthCreateIntegrationResponse``; no auth service runs here, so no keys are issued."""
        return {
            "auth_provider": PROVIDER,
            "auth_provider_project_id": self.auth_provider_project_id,
            "pub_client_key": "",
            "secret_server_key": "",
            "jwks_url": self.jwks_url,
            "schema_name": SCHEMA,
            "table_name": "user",
            "base_url": self.base_url,
        }


def _integration(row: dict[str, Any]) -> Integration:
    return Integration(
        row["project_id"],
        row["branch_id"],
        row["database_name"],
        row["auth_provider_project_id"],
        row["created_at"],
        row["settings"],
    )


def find(neon: Neon, project_id: str, branch_id: str | None) -> tuple[Target, Integration | None]:
    """The branch (default when None) and its integration, if it has one."""
    branch = neon.branch(project_id, branch_id)
    row = neon.catalog.get_neon_auth(project_id, branch.id)
    database = row["database_name"] if row else None
    return neon.target(project_id, branch.id, database), _integration(row) if row else None


def require(neon: Neon, project_id: str, branch_id: str | None) -> tuple[Target, Integration]:
    target, found = find(neon, project_id, branch_id)
    if found is None:
        raise NotFound(
            f"Neon Auth is not provisioned for branch {target.branch.id} of project {project_id}; "
            "run provision_neon_auth first"
        )
    return target, found


def provision(
    neon: Neon, project_id: str, branch_id: str | None, database: str | None, provider: str = PROVIDER
) -> tuple[Integration, bool]:
    """Provision Neon Auth on a branch database: the schema, then the integration row.

    Returns the integration and whether this call created it (False: it already existed, and
    nothing was changed). Only Better Auth is offered, as Neon offers it for new integrations."""
    if provider != PROVIDER:
        raise InvalidRequest(f"auth_provider {provider!r} is not supported here; use {PROVIDER!r}")
    branch = neon.branch(project_id, branch_id)
    existing = neon.catalog.get_neon_auth(project_id, branch.id)
    if existing is not None:
        return _integration(existing), False
    target = neon.target(project_id, branch.id, database)
    sql.run(neon.role_conninfo(target), _TABLES)
    created = neon.catalog.insert_neon_auth(
        project_id, branch.id, target.database.name, PROVIDER, ids.random_alnum(12), default_settings()
    )
    row = neon.catalog.get_neon_auth(project_id, branch.id)
    if row is None:  # the branch was deleted meanwhile
        raise NotFound(f"branch {branch.id} of project {project_id} no longer exists")
    return _integration(row), created


def snapshot(settings: dict[str, Any]) -> dict[str, Any]:
    """The configurable settings as readers see them: secrets replaced by the redaction sentinel."""
    email = dict(settings["email_provider"])
    if email.get("type") == "standard":
        email["password"] = REDACTED if email.pop("password_set", False) else None
    providers = [
        {
            "id": p["id"],
            "type": p["type"],
            "client_id": p.get("client_id"),
            "client_secret": REDACTED if p.get("secret_set") else None,
        }
        for p in settings["oauth_providers"]
    ]
    return {
        "trusted_origins": list(settings["trusted_origins"]),
        "allow_localhost": settings["allow_localhost"],
        "auth_methods": {"email_password": dict(settings["email_password"])},
        "oauth_providers": providers,
        "email_provider": email,
    }


_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://(.*)$")
_LOCAL_HOST = re.compile(r"^(localhost|127\.0\.0\.1|\[::1\])$", re.IGNORECASE)
_MATCH_ALL_HOST = re.compile(r"^\*+(\.[a-z]{2,})?$", re.IGNORECASE)
_BLOCKED_SCHEMES = frozenset({"file", "data", "javascript", "vbscript", "about"})


def _host(rest: str) -> str | None:
    host_port = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if not host_port:
        return None
    if host_port.startswith("["):
        end = host_port.find("]")
        return host_port[: end + 1] if end >= 0 else None
    return host_port.split(":")[0]


def trusted_origin_problem(value: str) -> str | None:
    """Why ``value`` cannot be a trusted origin (Neon's rules: a security boundary), or None."""
    if not value or value.strip() != value or re.search(r"[\x00-\x1f\x7f]", value):
        return "it is empty, has surrounding whitespace or control characters"
    match = _SCHEME.match(value)
    if not match:
        return 'it needs a "<scheme>://" prefix'
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme in _BLOCKED_SCHEMES:
        return f"the {scheme}: scheme is not allowed"
    if scheme in ("http", "https"):
        host = _host(rest)
        if not host:
            return "it has no host"
        if _MATCH_ALL_HOST.match(host):
            return "a host-only or TLD-only wildcard matches everything"
        if scheme == "http" and not _LOCAL_HOST.match(host):
            return "plain http:// is allowed only for localhost, 127.0.0.1 and [::1]"
    return None


def _need(args: dict[str, Any], key: str, operation: str) -> Any:
    if args.get(key) is None:
        raise InvalidRequest(f"{key} is required for operation {operation}")
    return args[key]


def _provider(settings: dict[str, Any], provider_id: str) -> dict[str, Any] | None:
    return next((p for p in settings["oauth_providers"] if p["id"] == provider_id), None)


def configure(settings: dict[str, Any], args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Apply one ``configure_neon_auth`` operation to a copy of ``settings``: (new settings, what changed).

    Raises InvalidRequest, naming the argument, when the operation cannot apply; the settings are then unchanged."""
    new = copy.deepcopy(settings)
    op = args["operation"]
    if op in ("add_trusted_origin", "remove_trusted_origin"):
        origin = str(_need(args, "trusted_origin", op))
        problem = trusted_origin_problem(origin)
        if problem:
            raise InvalidRequest(f"trusted_origin {origin!r} is not accepted: {problem}")
        if op == "add_trusted_origin":
            if origin in new["trusted_origins"]:
                return new, f"{origin} was already a trusted origin; nothing changed."
            new["trusted_origins"].append(origin)
            return new, f"Added trusted origin {origin}."
        if origin not in new["trusted_origins"]:
            raise NotFound(f"{origin} is not a trusted origin (trusted: {new['trusted_origins']})")
        new["trusted_origins"].remove(origin)
        return new, f"Removed trusted origin {origin}."
    if op == "set_allow_localhost":
        new["allow_localhost"] = bool(_need(args, "allow_localhost", op))
        return new, f"allow_localhost is now {str(new['allow_localhost']).lower()}."
    if op == "update_auth_methods":
        block = (_need(args, "methods", op) or {}).get("email_password")
        changes = {k: v for k, v in (block or {}).items() if v is not None}
        if not changes:
            raise InvalidRequest("methods.email_password must set at least one field for update_auth_methods")
        new["email_password"].update(changes)
        return new, "Updated email and password settings: " + ", ".join(sorted(changes)) + "."
    if op in ("add_oauth_provider", "update_oauth_provider", "remove_oauth_provider"):
        return _oauth(new, args, op)
    if op == "update_email_provider":
        email = dict(_need(args, "email_provider", op))
        if email.get("type") == "standard":
            email["password_set"] = bool(email.pop("password", None))
        new["email_provider"] = email
        return new, f"Email provider replaced (type {email.get('type')})."
    raise InvalidRequest(f"operation {op!r} is not one of {', '.join(OPERATIONS)}")


def _oauth(new: dict[str, Any], args: dict[str, Any], op: str) -> tuple[dict[str, Any], str]:
    provider_id = str(_need(args, "oauth_provider", op))
    config = {k: v for k, v in (args.get("oauth_provider_config") or {}).items() if v is not None}
    if "microsoft_tenant_id" in config and provider_id != "microsoft":
        raise InvalidRequest(f"microsoft_tenant_id applies only to oauth_provider microsoft, not {provider_id}")
    current = _provider(new, provider_id)
    if op == "add_oauth_provider":
        if current is not None:
            raise InvalidRequest(f"OAuth provider {provider_id} is already configured; use update_oauth_provider")
        if ("client_id" in config) != ("client_secret" in config):
            raise InvalidRequest(
                "oauth_provider_config needs client_id and client_secret together (your own credentials), "
                "or neither (shared credentials)"
            )
        kind = "standard" if "client_id" in config else "shared"
        entry = {
            "id": provider_id,
            "type": kind,
            "client_id": config.get("client_id"),
            "secret_set": kind == "standard",
        }
        if "microsoft_tenant_id" in config:
            entry["microsoft_tenant_id"] = config["microsoft_tenant_id"]
        new["oauth_providers"].append(entry)
        return new, f"Added OAuth provider {provider_id} ({kind} credentials)."
    if current is None:
        known = [p["id"] for p in new["oauth_providers"]]
        raise NotFound(f"OAuth provider {provider_id} is not configured (configured: {known})")
    if op == "remove_oauth_provider":
        new["oauth_providers"].remove(current)
        return new, f"Removed OAuth provider {provider_id}."
    if not config:
        raise InvalidRequest(
            "update_oauth_provider needs at least one field in oauth_provider_config "
            "(client_id, client_secret or microsoft_tenant_id)"
        )
    if "client_id" in config:
        current["client_id"] = config["client_id"]
    if "client_secret" in config:
        current["secret_set"] = True
    if "microsoft_tenant_id" in config:
        current["microsoft_tenant_id"] = config["microsoft_tenant_id"]
    if current["client_id"] and current["secret_set"]:
        current["type"] = "standard"
    return new, f"Updated OAuth provider {provider_id}: " + ", ".join(sorted(config)) + "."


def rest_views(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings as Neon's REST API splits them (``.../auth/<slice>``), secrets redacted.

    Keys are the path suffixes; values the bodies: ``NeonAuthRedirectUriWhitelistResponse``,
    ``NeonAuthAllowLocalhostResponse``, ``NeonAuthEmailAndPasswordConfig``,
    ``ListNeonAuthOauthProvidersResponse`` and ``NeonAuthEmailServerConfig``."""
    email = settings["email_password"]
    providers = []
    for p in settings["oauth_providers"]:
        entry = {"id": p["id"], "type": p["type"]}
        if p.get("client_id"):
            entry["client_id"] = p["client_id"]
        if p.get("secret_set"):
            entry["client_secret"] = REDACTED
        providers.append(entry)
    server = {k: v for k, v in settings["email_provider"].items() if v is not None and k != "password_set"}
    if server.get("type") == "standard":
        server["password"] = REDACTED if settings["email_provider"].get("password_set") else ""
    return {
        "domains": {"domains": [{"domain": o, "auth_provider": PROVIDER} for o in settings["trusted_origins"]]},
        "allow_localhost": {"allow_localhost": settings["allow_localhost"]},
        "email_and_password": {
            "enabled": email["enabled"],
            "email_verification_method": email["email_verification_method"],
            "require_email_verification": email["require_email_verification"],
            "auto_sign_in_after_verification": email["auto_sign_in_after_verification"],
            "send_verification_email_on_sign_up": email["verify_email_on_sign_up"],
            "send_verification_email_on_sign_in": email["verify_email_on_sign_in"],
            "disable_sign_up": not email["allow_sign_up"],
        },
        "oauth_providers": {"providers": providers},
        "email_provider": server,
    }
