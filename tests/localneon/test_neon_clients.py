"""localneon driven by Neon's own client libraries from npm, not by code of ours.

`npm/drive.mjs` uses `@neondatabase/api-client` (REST, what the published server 0.6.5 uses) and
`@neondatabase/serverless`'s `neon()` (SQL over HTTP, pointed at localneon's `/sql` with
`neonConfig.fetchEndpoint`) against the session's localneon HTTP server: it creates a project, lists
its branches, gets its database and a connection URI, runs queries with parameters and a
`transaction([...])`, and provokes errors. `npm/drive-sdk.mjs` does the same with `@neon/sdk`, the
client of Neon's hosted server at its repository's HEAD, called as that server calls it, Neon Auth's
settings writes included. Without node and npm on PATH these tests are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.localneon.helpers import HttpServer
from tests.localneon.npm_packages import NPM_DIR, NpmMissing, ensure_installed


@pytest.fixture(scope="module")
def installed() -> None:
    try:
        ensure_installed()
    except NpmMissing as exc:
        pytest.skip(f"{exc}: skipping the tests that drive localneon with Neon's npm packages")


def test_a_second_install_is_a_cache_hit(installed: None) -> None:
    assert ensure_installed() is False
    assert (NPM_DIR / "node_modules" / "@neondatabase" / "serverless" / "package.json").is_file()


def drive(server: HttpServer, script: str = "drive.mjs") -> dict[str, Any]:
    env = {
        **os.environ,
        "LOCALNEON_API_URL": server.api_url,
        "LOCALNEON_TOKEN": server.token,
        "LOCALNEON_SQL_URL": f"{server.url}/sql",
    }
    node = shutil.which("node") or "node"
    proc = subprocess.run([node, script], cwd=NPM_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_neon_clients_drive_localneon(installed: None, http_server: HttpServer) -> None:
    out = drive(http_server)

    assert out["account"]["auth"]["auth_method"] == "api_key_user"
    assert out["account"]["org_id"] == "org-localneon" and out["account"]["shared"] == 0

    uri = urlsplit(out["rest"]["uri"])
    assert uri.hostname == "127.0.0.1" and uri.port and uri.path.startswith("/ln_")
    assert out["created"]["uri"] == out["rest"]["uri"]
    assert out["rest"]["branches"] == ["main"]
    assert out["rest"]["database"]["name"] == "neondb"

    sql = out["sql"]
    # Text output parsed by the driver's own type parsers: int, text, text[] and timestamptz round-trip.
    assert sql["inserted"] == {"id": 1, "body": "it's", "tags": ["a", "b"], "at": "1970-01-01T00:00:00.000Z"}
    assert sql["full"] == {
        "rows": [{"answer": 42, "missing": True}],
        "command": "SELECT",
        "rowCount": 1,
        "fields": [["answer", 23], ["missing", 16]],
    }
    assert sql["transaction"] == {"first": [{"id": 2}], "second": [], "count": [{"n": 3}]}

    failures = out["failures"]
    assert failures["syntax"] == {
        "name": "NeonDbError",
        "message": 'syntax error at or near "SELEC"',
        "code": "42601",
        "severity": "ERROR",
        "position": "1",
    }
    assert failures["transaction"]["code"] == "23502" and failures["transaction"]["column"] == "body"
    assert failures["rows_after_failed_transaction"] == 3  # the failed batch's first insert was rolled back
    assert failures["password"]["code"] == "28P01"

    project_id = out["created"]["project_id"]
    assert out["deleted"] == project_id
    with http_server.api() as api:
        assert api.get(f"/projects/{project_id}").status_code == 404


SECRETS = ("client-secret-value", "smtp-password-value")  # what drive-sdk.mjs sends as an OAuth and an SMTP secret


def test_neon_sdk_drives_localneon_as_neons_hosted_server_calls_it(installed: None, http_server: HttpServer) -> None:
    out = drive(http_server, "drive-sdk.mjs")
    assert not any(secret in json.dumps(out) for secret in SECRETS)  # never stored, never echoed

    account = out["account"]
    assert account["auth"]["auth_method"] == "api_key_user" and account["auth"]["account_id"] == account["user_id"]
    assert account["org_ids"] == ["org-localneon"] == [account["org_id"]] and account["members"] == 1
    assert account["shared"] == {"projects": []}

    project_id = out["deleted"]
    projects = out["projects"]
    assert (
        projects["name"] == projects["asked"]
        and projects["name"].startswith("sdk-test-")
        and projects["in_org"]
        and projects["searched"] == [project_id]
    )
    assert projects["missing"]["name"] == "NeonNotFoundError" and "no-such-project-1" in projects["missing"]["message"]

    rest = out["rest"]
    assert rest["branches"] == ["main"] and rest["databases"] == ["neondb"] and rest["database"]["name"] == "neondb"
    # connectionString() with only the project resolves branch, role and database itself (and asks pooled=true).
    assert rest["resolved"] == rest["explicit"] and urlsplit(rest["resolved"]).hostname == "127.0.0.1"
    assert rest["branch_endpoints"] == ["read_write"]
    assert rest["missing_database"]["status"] == 404 and "'nope'" in rest["missing_database"]["message"]
    assert out["sql"] == {"count": 2}

    branching = out["branching"]
    assert branching["dev_uri"] and branching["dev_uri"] != rest["resolved"]  # its own database
    assert branching["diff_mentions_note"] and branching["restored"]
    assert branching["after_delete"]["name"] == "NeonNotFoundError"

    auth = out["neon_auth"]
    assert auth["before"]["status"] == 404 and auth["again"]["status"] == 409
    assert auth["enabled"]["schema_name"] == "neon_auth"
    # Batch delete: the listed origin is removed, the one never added is skipped, as on Neon.
    assert auth["domains"] == [{"domain": "https://app.example.com", "auth_provider": "better_auth"}]
    assert auth["bad_domain"]["status"] == 400 and "plain http://" in auth["bad_domain"]["message"]
    assert auth["localhost"] == auth["read_back"]["localhost"] == {"allow_localhost": False}
    assert auth["email_password"] == auth["read_back"]["email_password"]
    assert auth["email_password"]["disable_sign_up"] is True
    assert auth["email_password"]["email_verification_method"] == "link"
    redacted = "***redacted***"
    assert auth["added"] == {"id": "microsoft", "type": "standard", "client_id": "cid", "client_secret": redacted}
    assert auth["updated"]["client_id"] == "cid2"
    assert [p["id"] for p in auth["providers"]] == ["google", "microsoft"]  # github removed
    assert auth["email_provider"]["password"] == auth["read_back"]["email_provider"]["password"] == "***redacted***"
    assert auth["read_back"]["email_provider"]["host"] == "smtp.example.com"
    assert auth["test_email"]["success"] is False and "no mail relay" in auth["test_email"]["error_message"]
    assert auth["bad_body"]["status"] == 400 and "allow_localhost must be a boolean" in auth["bad_body"]["message"]

    with http_server.api() as api:
        assert api.get(f"/projects/{project_id}").status_code == 404


def test_sql_refuses_databases_it_does_not_manage(http_server: HttpServer) -> None:
    """The same error path the driver reads (HTTP 400, JSON with a message), for URIs that are not ours."""
    sql = f"{http_server.url}/sql"
    cases = {
        "postgresql://u:p@db.example.com/neondb": "db.example.com",
        "postgresql://postgres:x@127.0.0.1/postgres": "password authentication failed for user 'postgres'",
        "mysql://u:p@127.0.0.1/x": "postgresql://",
    }
    with httpx.Client(timeout=30) as http:
        for uri, expected in cases.items():
            response = http.post(sql, json={"query": "SELECT 1"}, headers={"Neon-Connection-String": uri})
            assert response.status_code == 400 and expected in response.json()["message"], (uri, response.text)
        missing = http.post(sql, json={"query": "SELECT 1"})
        assert missing.status_code == 400 and "Neon-Connection-String" in missing.json()["message"]
