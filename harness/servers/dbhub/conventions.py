"""DBHub's tool names and roles; a leaf module (it imports only the roles type).

Read from DBHub 1.4.0's source (`dist/index.js`, `dist/chunk-*.js` of `@bytebase/dbhub`): its
built-in tools are `execute_sql` and `search_objects` (what a source gets when its `[[tools]]`
name none, and what `published/*.toml` list), plus `explain_sql` and `health_check`, which only a
`[[tools]]` entry turns on. It annotates each of them: `execute_sql` is `destructiveHint: true`
unless its tool config says `readonly = true` (then `readOnlyHint: true`), the other three are
read-only. There is no staging tool: a change can only be shown to the user and run once approved.
"""

from __future__ import annotations

from harness.servers.roles import ToolRoles

EXECUTE_SQL_TOOL = "execute_sql"  # {"sql": "..."}: one statement, or several separated by ';' (one transaction)
SEARCH_OBJECTS_TOOL = "search_objects"  # {"object_type", "pattern", "schema", "table", "detail_level", "limit"}
EXPLAIN_SQL_TOOL = "explain_sql"
HEALTH_CHECK_TOOL = "health_check"
DBHUB_TOOLS = frozenset({EXECUTE_SQL_TOOL, SEARCH_OBJECTS_TOOL, EXPLAIN_SQL_TOOL, HEALTH_CHECK_TOOL})

# The read-write annotations DBHub declares, for a tool listed without them (DBHub always lists them).
ROLES = ToolRoles(
    family="dbhub",
    run_sql=(EXECUTE_SQL_TOOL,),
    destructive=frozenset({EXECUTE_SQL_TOOL}),
    read_only=frozenset({SEARCH_OBJECTS_TOOL, EXPLAIN_SQL_TOOL, HEALTH_CHECK_TOOL}),
    explain=(EXPLAIN_SQL_TOOL,),
)
