"""Neon Auth's settings writes over REST (what `@neon/sdk` sends for Neon's hosted server's
configure_neon_auth): answers shaped as Neon's schemas, the same catalog row the twin's own tool
changes, and a bad body or an unprovisioned branch refused with Neon's error body naming why."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from localneon.engine.branching import Neon
from tests.localneon.helpers import HttpServer, Proj
from tests.localneon.test_api import check_error
from tests.localneon.test_twin_tools import openapi_errors


@pytest.fixture
def api(http_server: HttpServer) -> Iterator[httpx.Client]:
    with http_server.api() as client:
        yield client


@pytest.fixture
def auth_path(api: httpx.Client, project: Proj) -> str:
    path = f"/projects/{project.id}/branches/{project.main}/auth"
    assert api.post(path, json={"auth_provider": "better_auth"}).status_code == 201
    return path


def test_every_write_needs_neon_auth_provisioned(api: httpx.Client, project: Proj) -> None:
    path = f"/projects/{project.id}/branches/{project.main}/auth"
    writes = [
        ("PATCH", "allow_localhost", {"allow_localhost": True}),
        ("POST", "domains", {"domain": "https://a.example.com", "auth_provider": "better_auth"}),
        ("DELETE", "domains", {"auth_provider": "better_auth", "domains": [{"domain": "https://a.example.com"}]}),
        ("POST", "oauth_providers", {"id": "github"}),
        ("PATCH", "email_and_password", {"enabled": False}),
        ("PATCH", "email_provider", {"type": "shared"}),
    ]
    for method, suffix, body in writes:
        response = api.request(method, f"{path}/{suffix}", json=body)
        assert "not provisioned" in check_error(response, 404), (method, suffix)


def test_writes_answer_neons_shapes_and_change_the_twins_row(
    api: httpx.Client, auth_path: str, project: Proj, neon: Neon
) -> None:
    added = api.post(f"{auth_path}/domains", json={"domain": "https://a.example.com", "auth_provider": "better_auth"})
    assert added.status_code == 201 and openapi_errors("NeonAuthRedirectURIWhitelistResponse", added.json()) == []
    provider = api.post(f"{auth_path}/oauth_providers", json={"id": "microsoft"})
    assert provider.status_code == 200 and openapi_errors("NeonAuthOauthProvider", provider.json()) == []
    assert provider.json() == {"id": "microsoft", "type": "shared"}
    server = api.patch(f"{auth_path}/email_provider", json={"type": "shared", "sender_name": "Blog"})
    assert server.status_code == 200 and openapi_errors("NeonAuthEmailServerConfig", server.json()) == []
    updated = api.patch(f"{auth_path}/email_and_password", json={"disable_sign_up": True, "enabled": False})
    assert updated.status_code == 200
    assert updated.json()["disable_sign_up"] is True and updated.json()["enabled"] is False

    stored = neon.catalog.get_neon_auth(project.id, project.main)
    assert stored is not None
    settings = stored["settings"]
    assert settings["trusted_origins"] == ["https://a.example.com"]
    assert [p["id"] for p in settings["oauth_providers"]] == ["google", "github", "microsoft"]
    assert settings["email_password"]["allow_sign_up"] is False and settings["email_password"]["enabled"] is False
    assert settings["email_provider"] == {"type": "shared", "sender_name": "Blog"}

    removed = api.request("DELETE", f"{auth_path}/oauth_providers/microsoft")
    assert removed.status_code == 200
    assert "not configured" in check_error(api.request("DELETE", f"{auth_path}/oauth_providers/microsoft"), 404)


@pytest.mark.parametrize(
    ("method", "suffix", "body", "named"),
    [
        ("PATCH", "allow_localhost", {"allow_localhost": "yes"}, "allow_localhost must be a boolean"),
        ("PATCH", "allow_localhost", {"allow_localhost": True, "extra": 1}, "unknown field(s) extra"),
        ("POST", "domains", {"domain": "https://*", "auth_provider": "better_auth"}, "wildcard"),
        ("POST", "domains", {"domain": "https://a.example.com", "auth_provider": "stack"}, "auth_provider"),
        ("DELETE", "domains", {"domains": ["https://a.example.com"]}, "list of {domain: string}"),
        ("POST", "oauth_providers", {"id": "facebook"}, "id must be one of"),
        ("POST", "oauth_providers", {"id": "github"}, "already configured"),
        ("POST", "oauth_providers", {"id": "vercel", "client_id": "only-the-id"}, "client_id and client_secret"),
        ("PATCH", "oauth_providers/google", {}, "at least one field"),
        ("PATCH", "oauth_providers/vercel", {"client_id": "x"}, "not configured"),
        ("PATCH", "email_and_password", {}, "at least one of"),
        ("PATCH", "email_and_password", {"email_verification_method": "sms"}, "link, otp"),
        ("PATCH", "email_provider", {"type": "ses"}, "'standard' or 'shared'"),
        ("PATCH", "email_provider", {"type": "standard", "host": "smtp.example.com"}, "port must be an integer"),
        ("POST", "send_test_email", {"recipient_email": "a@example.com"}, "host must be a string"),
    ],
)
def test_a_bad_write_is_refused_naming_the_field_and_changes_nothing(
    api: httpx.Client, auth_path: str, project: Proj, neon: Neon, method: str, suffix: str, body: dict, named: str
) -> None:
    before = neon.catalog.get_neon_auth(project.id, project.main)
    response = api.request(method, f"{auth_path}/{suffix}", json=body)
    assert named in check_error(response, 404 if "not configured" in named else 400)
    assert neon.catalog.get_neon_auth(project.id, project.main) == before


def test_a_body_that_is_not_json_and_a_method_not_served_get_neons_error_body(
    api: httpx.Client, auth_path: str
) -> None:
    bad = api.patch(f"{auth_path}/allow_localhost", content=b"{not json", headers={"content-type": "application/json"})
    assert "not valid JSON" in check_error(bad, 400)
    assert "not valid JSON" in check_error(api.post(auth_path, content=b"[", headers={"content-type": "x"}), 400)
    refused = api.put(f"{auth_path}/allow_localhost", json={"allow_localhost": True})
    assert "PUT is not served" in check_error(refused, 405)
