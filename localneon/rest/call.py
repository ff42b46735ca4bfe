"""One REST request as a route sees it: ``Call``, the engine and the request, and what routes ask of it.

Every route of the API is a plain function ``(call: Call) -> Response``, listed once in
``localneon.rest.routes``; it runs in Starlette's thread pool (the engine's work blocks) and raises a
``LocalNeonError`` for a request it cannot honour, which the table turns into Neon's error body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import QueryParams
from starlette.requests import Request

from localneon.engine.branching import Neon
from localneon.engine.catalog import Branch, Project
from localneon.engine.errors import InvalidRequest


@dataclass(frozen=True)
class Call:
    """The engine a route works on, and one request: its path parameters, query and raw body."""

    neon: Neon
    request: Request
    raw_body: bytes = b""

    @property
    def query(self) -> QueryParams:
        return self.request.query_params

    def path(self, name: str) -> str:
        value: str = self.request.path_params[name]
        return value

    def body(self) -> dict[str, Any]:
        """The JSON object body ({} when empty); anything else is an InvalidRequest naming why."""
        if not self.raw_body.strip():
            return {}
        try:
            data = json.loads(self.raw_body)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"request body is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise InvalidRequest("request body must be a JSON object")
        return data

    def project(self) -> Project:
        """The path's ``{project_id}`` (404 when there is none)."""
        return self.neon.project(self.path("project_id"))

    def branch(self) -> Branch:
        """The path's ``{branch_id}`` in its ``{project_id}`` (404 when either is missing; a branch's
        name is no id, as on Neon)."""
        project = self.project()
        return self.neon.branch(project.id, self.path("branch_id"))

    def limit(self, default: int, maximum: int = 400) -> int:
        """The ``limit`` query parameter, between 1 and ``maximum``."""
        raw = self.query.get("limit")
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError as exc:
            raise InvalidRequest(f"limit must be an integer, got {raw!r}") from exc
        if not 1 <= value <= maximum:
            raise InvalidRequest(f"limit must be between 1 and {maximum}")
        return value

    def offset(self) -> int:
        """The ``cursor`` query parameter read as an offset (0 when absent)."""
        cursor = self.query.get("cursor")
        if not cursor:
            return 0
        try:
            return max(int(cursor), 0)
        except ValueError as exc:
            raise InvalidRequest(f"invalid cursor {cursor!r}") from exc


def timestamp(value: Any, field: str) -> datetime | None:
    """An RFC 3339 timestamp from a body field (None when absent; UTC when it names no zone)."""
    if value in (None, ""):
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequest(f"{field} must be an RFC 3339 timestamp") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
