"""Project tools: list, create, describe, delete; and the single local organization."""

from __future__ import annotations

from typing import Any

from localneon.engine.branching import Neon
from localneon.engine.catalog import LOCAL_ORG_ID, LOCAL_ORG_NAME, iso
from localneon.engine.errors import InvalidRequest
from localneon.mcp.tools import Param, ToolSpec, integer, string
from localneon.mcp.tools.common import PROJECT_ID, branch_json, to_json


def _project_summary(neon: Neon, project_id: str) -> dict[str, Any]:
    project = neon.project(project_id)
    default = neon.catalog.default_branch(project.id)
    return {
        "id": project.id,
        "name": project.name,
        "org_id": project.org_id,
        "created_at": iso(project.created_at),
        "updated_at": iso(project.updated_at),
        "default_branch_id": default.id if default else None,
    }


def list_projects(neon: Neon, args: dict[str, Any]) -> str:
    limit = int(args.get("limit") or 10)
    org = args.get("org_id")
    if org and org != LOCAL_ORG_ID:
        return to_json({"projects": [], "note": f"organization {org!r} has no projects here"})
    projects = neon.catalog.list_projects(args.get("search"), args.get("cursor"), limit)
    result: dict[str, Any] = {"projects": [_project_summary(neon, p.id) for p in projects]}
    if len(projects) == limit:
        result["next_cursor"] = projects[-1].id
    return to_json(result)


def list_organizations(neon: Neon, args: dict[str, Any]) -> str:
    org = {"id": LOCAL_ORG_ID, "name": LOCAL_ORG_NAME, "handle": LOCAL_ORG_NAME}
    search = (args.get("search") or "").lower()
    found = [org] if not search or search in org["id"] or search in org["name"] else []
    return to_json({"organizations": found})


def list_shared_projects(neon: Neon, args: dict[str, Any]) -> str:
    """Projects other accounts share with this one: none here, where one local account owns every project."""
    limit = args.get("limit", 10)
    if not isinstance(limit, int | float) or not 1 <= limit <= 400:
        raise InvalidRequest(f"limit must be a number from 1 to 400, got {limit!r}")
    return to_json(
        {
            "shared_projects": [],
            "count": 0,
            "note": "this local server has a single account that owns every project, so none is shared with it; "
            "use list_projects for the projects it owns",
        }
    )


def create_project(neon: Neon, args: dict[str, Any]) -> str:
    created = neon.create_project(args.get("name") or None, org_id=args.get("org_id") or None)
    target = neon.target(created.project.id)
    lines = [
        f"Created project {created.project.id} ({created.project.name}).",
        f"Default branch: {created.branch.name} (id {created.branch.id})",
        f"Database: {target.database.name}",
        f"Role: {created.project.role_name}",
        f"Compute: {created.endpoints[0].id}",
        f"Connection string: {neon.uri(target)}",
        "",
        "Use this project id in later calls (run_sql, create_branch, prepare_database_migration, ...).",
    ]
    return "\n".join(lines)


def describe_project(neon: Neon, args: dict[str, Any]) -> str:
    summary = _project_summary(neon, args["projectId"])
    summary["branches"] = [branch_json(neon, b) for b in neon.catalog.list_branches(summary["id"])]
    return to_json(summary)


def delete_project(neon: Neon, args: dict[str, Any]) -> str:
    project = neon.delete_project(args["projectId"])
    return f"Deleted project {project.id} ({project.name}) with all its branches and databases."


TOOLS = [
    ToolSpec(
        "list_projects",
        (
            Param("cursor", string()),
            Param("limit", integer(minimum=1, maximum=400, default=10)),
            Param("search", string()),
            Param("org_id", string()),
        ),
        list_projects,
        read_only=True,
        idempotent=True,
        title="List Projects",
        category="projects",
        read_only_safe=True,
    ),
    ToolSpec(
        "list_organizations",
        (Param("search", string()),),
        list_organizations,
        read_only=True,
        idempotent=True,
        title="List Organizations",
        category="projects",
        read_only_safe=True,
    ),
    ToolSpec(
        "list_shared_projects",
        (
            Param("cursor", string()),
            Param("limit", {"type": "number", "default": 10}),
            Param("search", string()),
        ),
        list_shared_projects,
        read_only=True,
        idempotent=True,
        title="List Shared Projects",
        category="projects",
        read_only_safe=True,
    ),
    ToolSpec(
        "create_project",
        (Param("name", string()), Param("org_id", string())),
        create_project,
        title="Create Project",
        category="projects",
        read_only_safe=False,
    ),
    ToolSpec(
        "describe_project",
        (PROJECT_ID,),
        describe_project,
        read_only=True,
        idempotent=True,
        title="Describe Project",
        category="projects",
        read_only_safe=True,
    ),
    ToolSpec(
        "delete_project",
        (PROJECT_ID,),
        delete_project,
        destructive=True,
        title="Delete Project",
        category="projects",
        read_only_safe=False,
    ),
]
