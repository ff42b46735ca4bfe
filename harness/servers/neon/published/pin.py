"""Which package and version `EVAL_SERVER=neon-npm` runs: read from the committed package.json.

A leaf module (imports nothing of the harness), so settings can name the server stably (its
package and version) without touching npm.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

SEAM = Path(__file__).resolve().parent
PACKAGE_JSON = SEAM / "package.json"
LOCK_FILE = SEAM / "package-lock.json"
SERVER_PACKAGE = "@neondatabase/mcp-server-neon"
NAMED_SERVER = "neon-npm"  # the EVAL_SERVER value that runs it


@cache
def pinned_version() -> str:
    """The exact version package.json pins (a range there would make runs incomparable)."""
    spec = str(json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["dependencies"][SERVER_PACKAGE])
    if not spec[:1].isdigit():
        raise ValueError(f"{PACKAGE_JSON}: {SERVER_PACKAGE} must be pinned to an exact version, not {spec!r}")
    return spec


def pinned_label() -> str:
    """`@neondatabase/mcp-server-neon@0.6.5`: how experiments and comparison keys name this server."""
    return f"{SERVER_PACKAGE}@{pinned_version()}"


# The tools the pinned version lists (its dist/tools/definitions.js: 23), for the cases it can run
# (`harness.servers.neon.family.PublishedNeonFamily`); `tests/harness/test_published_server.py`
# compares this list with the installed server's own listing.
PUBLISHED_TOOLS = frozenset(
    {
        "complete_database_migration",
        "complete_query_tuning",
        "create_branch",
        "create_project",
        "delete_branch",
        "delete_project",
        "describe_branch",
        "describe_project",
        "describe_table_schema",
        "explain_sql_statement",
        "get_connection_string",
        "get_database_tables",
        "list_branch_computes",
        "list_organizations",
        "list_projects",
        "list_shared_projects",
        "list_slow_queries",
        "prepare_database_migration",
        "prepare_query_tuning",
        "provision_neon_auth",
        "reset_from_parent",
        "run_sql",
        "run_sql_transaction",
    }
)
