"""How one branch's schema differs from another's: a unified diff of their ``pg_dump --schema-only``
texts, the same for the MCP tool ``compare_database_schema`` and the REST route ``compare_schema``."""

from __future__ import annotations

import difflib

from localneon.engine.branching import Neon
from localneon.engine.errors import InvalidRequest


def schema_diff(neon: Neon, project_id: str, branch_id: str, database: str | None, base_id: str | None) -> str:
    """Unified diff of the base branch's schema dump (default: the parent) against the branch's."""
    child = neon.target(project_id, branch_id, database)
    base_id = base_id or child.branch.parent_id
    if not base_id:
        raise InvalidRequest(f"branch {child.branch.id} has no parent to compare with")
    base = neon.target(project_id, base_id, child.database.name)
    before = neon.schema_dump(base).splitlines(keepends=True)
    after = neon.schema_dump(child).splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, fromfile=base.branch.id, tofile=child.branch.id))
