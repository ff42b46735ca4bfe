"""The log tools (query_logs, list_log_fields, list_log_field_values), with Neon's schemas.

Neon's logs come from its telemetry service (OpenTelemetry records behind a LogQL API). This
local server runs no such pipeline and records no log lines, so after checking the arguments and
the project and branch they name, each tool says so as a tool error: an empty result would read
as "no errors happened", which nobody here can know.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from localneon.engine.branching import Neon
from localneon.engine.catalog import Branch
from localneon.engine.errors import InvalidRequest, LocalNeonError
from localneon.mcp.tools import Param, ToolSpec, integer, string

SEVERITY_LEVELS = ("trace", "debug", "info", "warn", "error", "fatal")
SOURCES = ("function", "storage", "pg_endpoint")
_DURATION = re.compile(r"^\d+(ms|s|m|h|d)$")
PROJECT = Param("projectId", string())
BRANCH = Param("branchId", string())


def _branch(neon: Neon, args: dict[str, Any]) -> Branch:
    """The branch the logs would come from: the named project (or the only one) and branch (or the default)."""
    project_id = args.get("projectId")
    if not project_id:
        projects = neon.catalog.list_projects(None, None, 2)
        if len(projects) != 1:
            raise InvalidRequest(
                f"projectId is required: {'several projects' if projects else 'no project'} exist here"
            )
        project_id = projects[0].id
    return neon.branch(project_id, args.get("branchId") or None)


def _check_window(args: dict[str, Any]) -> None:
    since = args.get("since")
    if since and not _DURATION.match(str(since)):
        raise InvalidRequest(f"since must be a duration such as 30m, 1h or 24h, got {since!r}")
    for key in ("startTime", "endTime"):
        value = args.get(key)
        if not value:
            continue
        try:
            parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidRequest(f"{key} must be an RFC 3339 timestamp, got {value!r}") from exc
        if parsed.tzinfo is None:
            raise InvalidRequest(f"{key} needs a time zone, for example 2026-07-16T09:00:00Z")


def _no_pipeline(tool: str, branch: Branch) -> LocalNeonError:
    return LocalNeonError(
        f"logs are not available on this local server: it runs no log pipeline (Neon's telemetry service), "
        f"so there are no log lines, fields or values for branch {branch.id} of project {branch.project_id}. "
        f"{tool} cannot tell whether anything was logged; use run_sql (for example on pg_stat_statements) "
        "to look at the database itself."
    )


def query_logs(neon: Neon, args: dict[str, Any]) -> str:
    branch = _branch(neon, args)
    _check_window(args)
    raise _no_pipeline("query_logs", branch)


def list_log_fields(neon: Neon, args: dict[str, Any]) -> str:
    raise _no_pipeline("list_log_fields", _branch(neon, args))


def list_log_field_values(neon: Neon, args: dict[str, Any]) -> str:
    branch = _branch(neon, args)
    if not str(args.get("field") or "").strip():
        raise InvalidRequest("field must name a log field, for example service_name")
    _check_window(args)
    raise _no_pipeline("list_log_field_values", branch)


def _spec(name: str, title: str, params: tuple[Param, ...], handler: Any) -> ToolSpec:
    return ToolSpec(
        name,
        params,
        handler,
        read_only=True,
        idempotent=True,
        title=title,
        category="observability",
        read_only_safe=True,
    )


TOOLS = [
    _spec(
        "query_logs",
        "Query Logs",
        (
            PROJECT,
            BRANCH,
            Param("source", string(enum=list(SOURCES), default="function")),
            Param("serviceName", string()),
            Param("minSeverity", string(enum=list(SEVERITY_LEVELS))),
            Param("severityText", string()),
            Param("bodyContains", string()),
            Param("traceId", string()),
            Param("since", string()),
            Param("startTime", string()),
            Param("endTime", string()),
            Param("limit", integer(exclusiveMinimum=0, maximum=1000, default=100)),
            Param("query", string()),
        ),
        query_logs,
    ),
    _spec("list_log_fields", "List Log Fields", (PROJECT, BRANCH), list_log_fields),
    _spec(
        "list_log_field_values",
        "List Log Field Values",
        (PROJECT, BRANCH, Param("field", string(), required=True), Param("since", string())),
        list_log_field_values,
    ),
]
