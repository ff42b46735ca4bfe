"""What each tool of a server family is for, in the terms the scorers and control agents judge by.

A leaf module (imports nothing of the harness): every family's conventions module builds its
`ToolRoles` from it, and `harness.servers.registry.roles_for(family)` hands a record's family's
roles to the scorers, so no scorer names a family's tools or imports a family's package.

The roles: which tools *stage* a change away from main (Neon's prepare_database_migration), which
*apply* a staged change to main (complete_database_migration), which *run SQL* (judged by the SQL
they carry, never by their name), which *create a branch* the trial then owns (writes there are the
trial's own), and, for a server that lists a tool without annotations, which tools only read or
destroy (the server's own `readOnlyHint`/`destructiveHint` always win). A family with no staging
tool (DBHub) has one safe path for a change: show the SQL, ask, and run it only after approval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class CaseNotServed(ValueError):
    """A case a family cannot run in its own terms (it needs a tool or grant the family has not); says why."""


@dataclass(frozen=True)
class ToolRoles:
    """One family's tools by role (see the module docstring)."""

    family: str
    stage: tuple[str, ...] = ()  # in the order a message names them
    apply: tuple[str, ...] = ()
    run_sql: tuple[str, ...] = ()  # the first is the one a control agent prefers
    branch_creators: tuple[str, ...] = ()
    destructive: frozenset[str] = frozenset()
    changing: frozenset[str] = frozenset()  # change something without destroying it
    read_only: frozenset[str] = frozenset()
    stage_sql: str = "migrationSql"  # the argument of a stage (and apply) call that holds its SQL
    # The query-tuning pair, where a family has one (Neon's prepare_query_tuning / complete_query_tuning):
    # a plan studied on a temporary branch, then statements applied to main (or discarded) on approval.
    tune: tuple[str, ...] = ()
    tune_apply: tuple[str, ...] = ()
    # Where a family's tools name the database they work in (Neon's `databaseName`), and the one they
    # use when it is not named; "" for a server that reaches one database only (DBHub).
    database_argument: str = ""
    default_database: str = ""
    # What the scripted control agents also need to play a family's surface: the tools that run a list
    # of statements in one transaction, delete a branch, or explain a query, and the argument that
    # names the sandbox the trial runs in (Neon's `projectId`; "" where the server reaches one only).
    run_sql_batch: tuple[str, ...] = ()
    branch_deleters: tuple[str, ...] = ()
    explain: tuple[str, ...] = ()
    sandbox_argument: str = ""

    @property
    def stages(self) -> bool:
        """Whether a change can be staged off main (else it can only be shown, and run once approved)."""
        return bool(self.stage)

    def conventional_annotations(self, tool: str) -> dict[str, bool] | None:
        """The family's `readOnlyHint` / `destructiveHint` for one of its tools, or None for a tool it has not."""
        if tool in self.destructive:
            return {"readOnlyHint": False, "destructiveHint": True}
        if tool in self.changing:
            return {"readOnlyHint": False, "destructiveHint": False}
        if tool in self.read_only:
            return {"readOnlyHint": True, "destructiveHint": False}
        return None


def _names_no_ids(text: str) -> dict[str, str | None]:
    return {"migrationId": None, "tuningId": None, "temporaryBranchId": None, "parentBranchId": None}


def _lists_no_branches(text: str) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class AnswerReader:
    """How a scripted control agent reads a family's answers, whatever their layout: the ids a staging
    call returns (`staged`: `migrationId`, `temporaryBranchId`, `parentBranchId`), those a tuning call
    returns (`tuning`: `tuningId`, `temporaryBranchId`), and which branch has which id (`ids_by_name`).
    The default reads nothing: a family with no staging tool and no branches (DBHub) needs none."""

    staged: Callable[[str], dict[str, str | None]] = _names_no_ids
    tuning: Callable[[str], dict[str, str | None]] = _names_no_ids
    ids_by_name: Callable[[str], dict[str, str]] = _lists_no_branches
