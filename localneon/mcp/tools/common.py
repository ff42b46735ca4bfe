"""Helpers the tool modules share: common parameters, target resolution, error context."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from localneon.engine import bounds
from localneon.engine.branching import Neon, Target, role_matches
from localneon.engine.catalog import Branch, iso
from localneon.engine.errors import InvalidRequest, LocalNeonError
from localneon.mcp.tools import Param, string

PROJECT_ID = Param("projectId", string(), required=True)
BRANCH_ID = Param("branchId", string())
DATABASE_NAME = Param("databaseName", string())
REQUIRED_DATABASE_NAME = Param("databaseName", string(), required=True)


def target(neon: Neon, args: dict[str, Any], branch_key: str = "branchId") -> Target:
    """The (project, branch, database) an SQL tool runs against; branch defaults to the default branch."""
    return neon.target(args["projectId"], args.get(branch_key) or None, args.get("databaseName") or None)


def where(t: Target) -> str:
    return f"branch {t.branch.id} ({t.branch.name}) of project {t.project.id}, database {t.database.name}"


def pg_message(exc: psycopg.Error) -> str:
    """PostgreSQL's own message (libpq's text keeps LINE, DETAIL and HINT when the server sent them)."""
    text = str(exc).strip() or (exc.diag.message_primary or type(exc).__name__)
    limit = bounds.MAX_RESULT_BYTES  # an error may quote a huge value ("invalid input syntax: ...")
    if len(text) > limit:
        text = f"{text[:limit]} ... (error message cut at {limit} characters)"
    return text


@contextmanager
def pg_errors(action: str, t: Target) -> Iterator[None]:
    """Turn a PostgreSQL error into a tool error saying what was being done, and where."""
    try:
        yield
    except psycopg.Error as exc:
        raise LocalNeonError(f"{action} on {where(t)} failed: {pg_message(exc)}") from exc


def check_role(neon: Neon, t: Target, role: str | None) -> None:
    """Only the project's own role exists locally; accept it, or its name without the suffix."""
    if role and not role_matches(t.project, role):
        raise InvalidRequest(f"role {role!r} not found in project {t.project.id}; its role is {t.project.role_name}")


def branch_json(neon: Neon, branch: Branch) -> dict[str, Any]:
    return {
        "id": branch.id,
        "name": branch.name,
        "project_id": branch.project_id,
        "parent_id": branch.parent_id,
        "default": branch.is_default,
        "created_at": iso(branch.created_at),
        "updated_at": iso(branch.updated_at),
        "expires_at": iso(branch.expires_at),
        "last_reset_at": iso(branch.last_reset_at),
        "databases": [d.name for d in neon.catalog.databases(branch.id)],
        "endpoints": [e.id for e in neon.catalog.endpoints(branch.project_id, branch.id)],
    }


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def require_text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"{key} must be a non-empty string")
    return value
