"""An async client for Neon's REST API v2, for Neon's cloud and the local server's `/api/v2` alike.

Why its own client: the parts clients get wrong are here once. Mutating calls return
`operations` that must finish before the next call on the project; 423/429/503 are retried with
backoff (honouring Retry-After); a server that restarted elsewhere (`recover`) is followed, and the
call repeated when that is safe; lists are paginated (projects by `pagination.cursor`, branches
by `pagination.next`); an organization's key gets its `org_id` on the calls that need it; errors
name the call and Neon's `{code, message}`, and never carry the key. `expires_at` (an early-access
field) is sent only when a branch TTL is configured, and a refusal of it is retried without it.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import httpx
from pydantic import SecretStr

from harness.clock import Clock, system_clock
from harness.config import scrub

RETRY_STATUSES = (423, 429, 503)
IDEMPOTENT = ("GET", "DELETE")  # repeated when no answer came: a second DELETE of what is gone answers 404
EXPIRY_REFUSALS = (400, 403, 422)  # how an account without the early-access `expires_at` answers
_EXPIRY_REFUSED: dict[str, str] = {}  # API base URL -> Neon's refusal: asked once per process, not per client
OK_OPERATION = ("finished", "skipped")
FAILED_OPERATION = ("failed", "error", "cancelled")


class NeonAPIError(RuntimeError):
    """A Neon API call that failed: which call, the HTTP status, and Neon's code and message."""

    def __init__(self, call: str, status: int | None, code: str = "", message: str = "") -> None:
        self.call = call
        self.status = status
        self.code = code
        self.message = message
        where = f"HTTP {status}" if status is not None else "no response"
        detail = ": ".join(part for part in (code, message) if part)
        super().__init__(f"Neon API {call} failed ({where}){': ' + detail if detail else ''}")


class NeonAPI:
    """Bearer-authenticated calls with operation waiting, retries and pagination."""

    def __init__(
        self,
        base_url: str,
        api_key: SecretStr | str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 6,
        backoff: float = 0.5,
        operation_poll: float = 0.5,
        operation_timeout: float = 300.0,
        recover: Callable[[], Awaitable[str | None]] | None = None,
        org_id: str | None = None,
        branch_ttl: timedelta | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.clock = clock  # expires_at and HTTP-date Retry-After values are computed from it
        self.base_url = base_url.rstrip("/")
        self.recover = recover  # called when the server is unreachable: the new base URL if it was restarted
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self._secrets = [key] if key else []
        headers = {"Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout)
        self.max_retries = max_retries
        self.backoff = backoff
        self.operation_poll = operation_poll
        self.operation_timeout = operation_timeout
        self.org_id = org_id
        # Connection URIs by (project, branch, database, role): a trial asks for the same one to load its
        # fixture and to capture main before and after; a URI does not change while its project lives.
        self._uris: dict[tuple[str, str, str, str], str] = {}
        self.branch_ttl = branch_ttl  # expires_at on branches the harness creates; None: not sent

    async def aclose(self) -> None:
        await self._client.aclose()

    def retarget(self, base_url: str) -> None:
        """Send every later call to `base_url` (a restarted local server listens on a new port)."""
        self.base_url = base_url.rstrip("/")
        self._client.base_url = httpx.URL(self.base_url)
        self._uris.clear()

    async def __aenter__(self) -> NeonAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing ---------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        allow: tuple[int, ...] = (),
    ) -> dict[str, Any]:
        """One call with retries on 423/429/503, and on transport errors for idempotent calls (GET, DELETE)."""
        call = f"{method} {path}"
        clean_params = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = recoveries = 0
        while True:
            try:
                response = await self._client.request(method, path, json=json, params=clean_params or None)
            except httpx.TransportError as error:
                # A refused connection never reached the server; a GET or DELETE may be repeated anyway.
                repeatable = isinstance(error, httpx.ConnectError) or method in IDEMPOTENT
                if self.recover is not None and recoveries < 3:
                    recoveries += 1
                    restarted = await self.recover()  # later calls go to a restarted server either way
                    if restarted:
                        self.retarget(restarted)
                        if repeatable:
                            continue
                # No answer (a connection the server closed as it was reused, a proxy that dropped it).
                if method in IDEMPOTENT and attempt < self.max_retries:
                    attempt += 1
                    await asyncio.sleep(self._delay(attempt, None))
                    continue
                raise NeonAPIError(call, None, "", scrub(f"{type(error).__name__}: {error}", self._secrets)) from None
            if response.status_code in RETRY_STATUSES and attempt < self.max_retries:
                attempt += 1
                await asyncio.sleep(self._delay(attempt, response.headers.get("retry-after")))
                continue
            if response.status_code in allow:
                return {}
            if response.status_code >= 400:
                raise self._error(call, response)
            if not response.content:
                return {}
            try:
                body = response.json()
            except ValueError:
                raise NeonAPIError(call, response.status_code, "", "response is not JSON") from None
            return body if isinstance(body, dict) else {"items": body}

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), 30.0)
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(retry_after)
                if parsed is not None:
                    return max(0.0, min((parsed - self.clock()).total_seconds(), 30.0))
        return float(min(self.backoff * (2 ** (attempt - 1)), 10.0))

    def _error(self, call: str, response: httpx.Response) -> NeonAPIError:
        code, message = "", ""
        try:
            body = response.json()
            if isinstance(body, dict):
                code = str(body.get("code") or "")
                message = str(body.get("message") or body.get("error") or "")
        except ValueError:
            message = response.text[:300]
        return NeonAPIError(call, response.status_code, code, scrub(message, self._secrets))

    async def wait_operations(self, project_id: str, operations: list[dict[str, Any]] | None) -> None:
        """Wait until every operation finished or was skipped; raise on failed/error/cancelled."""
        deadline = time.monotonic() + self.operation_timeout
        for operation in operations or []:
            op_id = operation.get("id")
            status = operation.get("status")
            while status not in OK_OPERATION:
                if status in FAILED_OPERATION:
                    raise NeonAPIError(
                        f"operation {operation.get('action', '?')} {op_id}",
                        None,
                        str(status),
                        str(operation.get("error") or ""),
                    )
                if time.monotonic() > deadline:
                    raise NeonAPIError(f"operation {op_id}", None, "timeout", f"still {status} after waiting")
                await asyncio.sleep(self.operation_poll)
                body = await self.request("GET", f"/projects/{project_id}/operations/{op_id}")
                operation = body.get("operation", {})
                status = operation.get("status")

    async def _mutate(self, method: str, path: str, project_id: str, **kwargs: Any) -> dict[str, Any]:
        body = await self.request(method, path, **kwargs)
        await self.wait_operations(project_id, body.get("operations"))
        return body

    # -- projects ---------------------------------------------------------------------------

    async def create_project(self, name: str, **project: Any) -> dict[str, Any]:
        """Create a project; returns the whole response (project, branch, roles, databases...)."""
        spec: dict[str, Any] = {"name": name, **project}
        if self.org_id and "org_id" not in spec:
            spec["org_id"] = self.org_id
        body = await self.request("POST", "/projects", json={"project": spec})
        project_id = body["project"]["id"]
        await self.wait_operations(project_id, body.get("operations"))
        branch_id = (body.get("branch") or {}).get("id")
        for entry in body.get("connection_uris") or []:  # Neon returns the default branch's URIs here
            parameters = entry.get("connection_parameters") or {}
            if branch_id and entry.get("connection_uri") and parameters.get("database") and parameters.get("role"):
                key = (project_id, branch_id, parameters["database"], parameters["role"])
                self._uris[key] = str(entry["connection_uri"])
        return body

    async def get_project(self, project_id: str) -> dict[str, Any]:
        return (await self.request("GET", f"/projects/{project_id}"))["project"]

    async def delete_project(self, project_id: str) -> None:
        """Delete a project; a project already gone counts as deleted."""
        self._forget_uris(project_id)
        body = await self.request("DELETE", f"/projects/{project_id}", allow=(404,))
        if body:
            await self.wait_operations(project_id, body.get("operations"))

    async def list_projects(self, search: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Every project (following `pagination.cursor`)."""
        projects: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            params = {"search": search, "limit": limit, "cursor": cursor, "org_id": self.org_id}
            body = await self.request("GET", "/projects", params=params)
            page = body.get("projects", [])
            fresh = [p for p in page if p["id"] not in seen]
            seen.update(p["id"] for p in fresh)
            projects.extend(fresh)
            cursor = (body.get("pagination") or {}).get("cursor")
            if not fresh or len(page) < limit or not cursor:
                return projects

    # -- branches ---------------------------------------------------------------------------

    async def list_branches(self, project_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Every branch of a project (following `pagination.next`)."""
        branches: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            params = {"limit": limit, "cursor": cursor}
            body = await self.request("GET", f"/projects/{project_id}/branches", params=params)
            fresh = [b for b in body.get("branches", []) if b["id"] not in seen]
            seen.update(b["id"] for b in fresh)
            branches.extend(fresh)
            cursor = (body.get("pagination") or {}).get("next")
            if not fresh or not cursor:
                return branches

    async def get_branch(self, project_id: str, branch_id: str) -> dict[str, Any]:
        return (await self.request("GET", f"/projects/{project_id}/branches/{branch_id}"))["branch"]

    async def create_branch(
        self,
        project_id: str,
        *,
        parent_id: str | None = None,
        name: str | None = None,
        expires_in: timedelta | None = None,
        endpoint: bool = True,
    ) -> dict[str, Any]:
        """Create a branch (with a read-write compute), with `expires_at` when `expires_in` is given.

        `expires_at` is an early-access field: an account without it refuses the request (nothing is
        created), so the branch is created again without it, and it is not sent again.
        """
        branch: dict[str, Any] = {}
        if parent_id:
            branch["parent_id"] = parent_id
        if name:
            branch["name"] = name
        if expires_in is not None and self.base_url not in _EXPIRY_REFUSED:
            branch["expires_at"] = (self.clock() + expires_in).strftime("%Y-%m-%dT%H:%M:%SZ")
        payload: dict[str, Any] = {"branch": branch}
        if endpoint:
            payload["endpoints"] = [{"type": "read_write"}]
        path = f"/projects/{project_id}/branches"
        try:
            return await self._mutate("POST", path, project_id, json=payload)
        except NeonAPIError as error:
            if "expires_at" not in branch or error.status not in EXPIRY_REFUSALS:
                raise
            _EXPIRY_REFUSED[self.base_url] = error.message or f"HTTP {error.status}"
            del branch["expires_at"]
            return await self._mutate("POST", path, project_id, json=payload)

    async def delete_branch(self, project_id: str, branch_id: str) -> None:
        """Delete a branch; one already gone counts as deleted."""
        self._forget_uris(project_id, branch_id)
        body = await self.request("DELETE", f"/projects/{project_id}/branches/{branch_id}", allow=(404,))
        if body:
            await self.wait_operations(project_id, body.get("operations"))

    async def restore_branch(self, project_id: str, branch_id: str, source_branch_id: str) -> dict[str, Any]:
        """Reset `branch_id` to the head of `source_branch_id` (its id and connection strings stay)."""
        path = f"/projects/{project_id}/branches/{branch_id}/restore"
        return await self._mutate("POST", path, project_id, json={"source_branch_id": source_branch_id})

    async def set_default_branch(self, project_id: str, branch_id: str) -> dict[str, Any]:
        return await self._mutate("POST", f"/projects/{project_id}/branches/{branch_id}/set_as_default", project_id)

    async def create_database(self, project_id: str, branch_id: str, name: str, owner: str) -> dict[str, Any]:
        """A new empty database on a branch, owned by `owner` (`POST .../databases`); the database's body."""
        path = f"/projects/{project_id}/branches/{branch_id}/databases"
        body = await self._mutate("POST", path, project_id, json={"database": {"name": name, "owner_name": owner}})
        return dict(body.get("database") or {})

    async def branch_schema(self, project_id: str, branch_id: str, database: str) -> str:
        """The branch's schema-only SQL dump, raw."""
        path = f"/projects/{project_id}/branches/{branch_id}/schema"
        body = await self.request("GET", path, params={"db_name": database, "format": "sql"})
        return str(body.get("sql", ""))

    async def branch_roles(self, project_id: str, branch_id: str) -> list[dict[str, Any]]:
        body = await self.request("GET", f"/projects/{project_id}/branches/{branch_id}/roles")
        return list(body.get("roles", []))

    async def branch_endpoints(self, project_id: str, branch_id: str) -> list[dict[str, Any]]:
        body = await self.request("GET", f"/projects/{project_id}/branches/{branch_id}/endpoints")
        return list(body.get("endpoints", []))

    async def restart_endpoint(self, project_id: str, endpoint_id: str) -> None:
        """Restart a compute: every session on it ends (the harness's way to end a model's sessions)."""
        await self._mutate("POST", f"/projects/{project_id}/endpoints/{endpoint_id}/restart", project_id)

    def _forget_uris(self, *owner: str) -> None:
        """Drop the cached URIs of a project, or of one of its branches: they die with it."""
        self._uris = {key: uri for key, uri in self._uris.items() if key[: len(owner)] != owner}

    async def connection_uri(self, project_id: str, branch_id: str, database: str, role: str) -> str:
        key = (project_id, branch_id, database, role)
        if key not in self._uris:
            params = {"database_name": database, "role_name": role, "branch_id": branch_id}
            body = await self.request("GET", f"/projects/{project_id}/connection_uri", params=params)
            self._uris[key] = str(body["uri"])
        return self._uris[key]

    async def default_branch(self, project_id: str) -> dict[str, Any]:
        """The default branch, found by its `default` flag (not by name)."""
        for branch in await self.list_branches(project_id):
            if branch.get("default"):
                return branch
        raise NeonAPIError(f"GET /projects/{project_id}/branches", None, "", "project has no default branch")
