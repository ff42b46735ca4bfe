"""Branch tools: create, describe, delete, reset from parent, connection strings, computes."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from localneon.engine import sql
from localneon.engine.branching import Neon
from localneon.engine.catalog import Branch, iso
from localneon.engine.errors import InvalidRequest, NotFound
from localneon.engine.schema_diff import schema_diff
from localneon.mcp.tools import Param, ToolSpec, string
from localneon.mcp.tools.common import (
    BRANCH_ID,
    DATABASE_NAME,
    PROJECT_ID,
    branch_json,
    check_role,
    pg_errors,
    target,
    to_json,
)


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequest(f"expiresAt must be an RFC 3339 timestamp, got {value!r}") from exc
    if parsed.tzinfo is None:
        raise InvalidRequest("expiresAt needs a time zone (for example 2030-01-01T00:00:00Z)")
    return parsed


def create_branch(neon: Neon, args: dict[str, Any]) -> str:
    created = neon.create_branch(
        args["projectId"],
        parent_id=args.get("parentId") or None,
        name=args.get("branchName") or None,
        expires_at=_parse_time(args.get("expiresAt")),
    )
    b = created.branch
    lines = [
        f"Created branch {b.name} (id {b.id}) in project {b.project_id} from parent {b.parent_id}.",
        f"Databases: {', '.join(d.name for d in created.databases)}",
        f"Compute: {created.endpoints[0].id}",
    ]
    if b.expires_at:
        lines.append(f"Expires at: {iso(b.expires_at)}")
    lines.append("Writes on this branch do not affect its parent.")
    return "\n".join(lines)


def describe_branch(neon: Neon, args: dict[str, Any]) -> str:
    t = target(neon, args)
    info = branch_json(neon, t.branch)
    with pg_errors("describe_branch", t):
        info["tables"] = sql.list_tables(neon.role_conninfo(t))
    info["database"] = t.database.name
    return to_json(info)


def delete_branch(neon: Neon, args: dict[str, Any]) -> str:
    """Delete by id. An id naming no branch of the project (a branch *name* is one) deletes nothing
    and answers as Neon's tool does: its API answers such a DELETE 204 ("the branch doesn't exist or
    has already been deleted", Neon's OpenAPI), and Neon's delete_branch (0.6.5 and HEAD) then reports
    the deletion as done. The twin answers the same, so a model that passes a name is told what
    Neon would tell it, and is judged on what it then does, as it would be on Neon."""
    project_id, branch_id = args["projectId"], args["branchId"]
    neon.project(project_id)
    if neon.catalog.get_branch(project_id, branch_id) is None:
        return f"Deleted branch {branch_id} from project {project_id}."
    branch, _ = neon.delete_branch(project_id, branch_id)
    return f"Deleted branch {branch.name} (id {branch.id}) from project {branch.project_id}."


# What Neon's reset_from_parent takes for an id (`looksLikeBranchId` in its tools' utils, 0.6.5 and
# HEAD): "br-" and then three runs of lowercase letters and digits joined by "-". Anything else is
# looked up as a branch name.
_BRANCH_ID_SHAPE = re.compile(r"^br-[a-z0-9]+-[a-z0-9]+-[a-z0-9]+$")


def branch_by_id_or_name(neon: Neon, project_id: str, ref: str) -> Branch:
    """reset_from_parent's own lookup, as Neon's tool makes it (it lists the project's branches
    itself): a value shaped like a branch id must be the id of one; any other value must be a
    branch's name. Its two refusals in Neon's words."""
    neon.project(project_id)
    branches = neon.catalog.list_branches(project_id)
    if _BRANCH_ID_SHAPE.match(ref):
        by_id = next((b for b in branches if b.id == ref), None)
        if by_id is None:
            raise NotFound(f'Branch ID "{ref}" not found in project {project_id}')
        return by_id
    by_name = next((b for b in branches if b.name == ref), None)
    if by_name is None:
        names = ", ".join(b.name for b in branches)
        raise NotFound(f'Branch name "{ref}" not found in project {project_id}.\nAvailable branches: {names}')
    return by_name


def reset_from_parent(neon: Neon, args: dict[str, Any]) -> str:
    project_id = args["projectId"]
    branch = branch_by_id_or_name(neon, project_id, args["branchIdOrName"])
    if not branch.parent_id:
        raise InvalidRequest(f"branch {branch.id} ({branch.name}) has no parent to reset from")
    preserve = args.get("preserveUnderName") or None
    restored, _ = neon.restore_branch(project_id, branch.id, branch.parent_id, preserve)
    text = f"Reset branch {restored.name} (id {restored.id}) to the current state of its parent {branch.parent_id}."
    if preserve:
        kept = neon.catalog.get_branch_by_name(project_id, preserve)
        text += f"\nIts previous state is kept as branch {preserve} (id {kept.id if kept else 'unknown'})."
    return text


def get_connection_string(neon: Neon, args: dict[str, Any]) -> str:
    t = target(neon, args)
    check_role(neon, t, args.get("roleName"))
    compute = args.get("computeId")
    endpoints = [e.id for e in neon.catalog.endpoints(t.project.id, t.branch.id)]
    if compute and compute not in endpoints:
        raise NotFound(f"compute {compute!r} does not belong to branch {t.branch.id} (its computes: {endpoints})")
    return to_json(
        {
            "uri": neon.uri(t),
            "project_id": t.project.id,
            "branch_id": t.branch.id,
            "database": t.database.name,
            "role": t.project.role_name,
            "compute_id": endpoints[0] if endpoints else None,
        }
    )


def list_branch_computes(neon: Neon, args: dict[str, Any]) -> str:
    project_id = args.get("projectId")
    wanted = args.get("branchId")
    if wanted and not project_id:
        raise InvalidRequest("branchId needs projectId")
    projects = [neon.project(project_id)] if project_id else neon.catalog.list_projects(None, None, 100)
    computes = []
    for project in projects:
        branch_id = neon.branch(project.id, wanted).id if wanted else None
        for ep in neon.catalog.endpoints(project.id, branch_id):
            computes.append(
                {
                    "compute_id": ep.id,
                    "project_id": ep.project_id,
                    "branch_id": ep.branch_id,
                    "type": "read_write",
                    "state": "active",
                    "created_at": iso(ep.created_at),
                }
            )
    return to_json({"computes": computes})


def compare_database_schema(neon: Neon, args: dict[str, Any]) -> str:
    diff = schema_diff(neon, args["projectId"], args["branchId"], args.get("databaseName") or None, None)
    return diff or "No differences: the branch's schema matches its parent's."


TOOLS = [
    ToolSpec(
        "create_branch",
        (PROJECT_ID, Param("branchName", string()), Param("parentId", string()), Param("expiresAt", string())),
        create_branch,
        title="Create Branch",
        category="branches",
        read_only_safe=False,
    ),
    ToolSpec(
        "describe_branch",
        (PROJECT_ID, Param("branchId", string(), required=True), DATABASE_NAME),
        describe_branch,
        read_only=True,
        idempotent=True,
        title="Describe Branch",
        category="branches",
        read_only_safe=True,
    ),
    ToolSpec(
        "delete_branch",
        (PROJECT_ID, Param("branchId", string(), required=True)),
        delete_branch,
        destructive=True,
        title="Delete Branch",
        category="branches",
        read_only_safe=False,
    ),
    ToolSpec(
        "reset_from_parent",
        (PROJECT_ID, Param("branchIdOrName", string(), required=True), Param("preserveUnderName", string())),
        reset_from_parent,
        destructive=True,
        title="Reset Branch from Parent",
        category="branches",
        read_only_safe=False,
    ),
    ToolSpec(
        "get_connection_string",
        (PROJECT_ID, BRANCH_ID, Param("computeId", string()), DATABASE_NAME, Param("roleName", string())),
        get_connection_string,
        read_only=True,
        idempotent=True,
        title="Get Connection String",
        category="branches",
        read_only_safe=True,
    ),
    ToolSpec(
        "list_branch_computes",
        (Param("projectId", string()), BRANCH_ID),
        list_branch_computes,
        read_only=True,
        idempotent=True,
        title="List Branch Computes",
        category="branches",
        read_only_safe=True,
    ),
    ToolSpec(
        "compare_database_schema",
        (PROJECT_ID, Param("branchId", string(), required=True), Param("databaseName", string(), required=True)),
        compare_database_schema,
        read_only=True,
        idempotent=True,
        title="Compare Database Schema",
        category="schema",
        read_only_safe=True,
    ),
]
