"""Neon's seam: tool names, the temporary-branch convention, sandboxes, state capture, REST client.

Only the conventions are imported here, so that `harness.cases`, the control agents and the
scorers can name Neon's tools without pulling in the sandbox machinery (which imports them).
Import the rest from its module: `api`, `sandbox`, `state`, `backend`, `janitor`.
"""

from harness.servers.neon.conventions import (
    COMPLETE_TOOL,
    EVAL_PREFIX,
    EXPECTED_PREFIX,
    PREPARE_TOOL,
    RUN_SQL_TOOL,
    RUN_SQL_TOOLS,
    RUN_SQL_TRANSACTION_TOOL,
    TEMPORARY_BRANCH_PREFIX,
    is_temporary_branch,
)

__all__ = [
    "COMPLETE_TOOL",
    "EVAL_PREFIX",
    "EXPECTED_PREFIX",
    "PREPARE_TOOL",
    "RUN_SQL_TOOL",
    "RUN_SQL_TOOLS",
    "RUN_SQL_TRANSACTION_TOOL",
    "TEMPORARY_BRANCH_PREFIX",
    "is_temporary_branch",
]
