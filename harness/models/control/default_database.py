"""`control:default-database`: the careful agent, except that it never says which database.

Why: Neon's tools take `databaseName` and use the project's default database (neondb) without it.
On a project with two databases, an agent that leaves it out stages, verifies, asks and applies
every step of the safe path in the wrong database: each call looks right by name. This agent
follows the careful plan with the database argument dropped from every call (set to the default
where a tool's schema requires it: the agent believes there is one database), so every case that
names another database (`database:`) must catch it, while on a case about the default database
(or on a single-database fixture) it is the careful agent.
"""

from __future__ import annotations

from typing import Any

from harness.models.control.oracle import OracleAgent
from harness.models.control.transcript import PastCall, Plan


class DefaultDatabaseAgent(OracleAgent):
    """`control:default-database`: see the module docstring."""

    def _plan_turn(self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Plan:
        plan = super()._plan_turn(calls, messages, tools)
        if isinstance(plan, str):
            return plan
        argument, default = self.roles.database_argument, self.roles.default_database
        forgotten: list[tuple[str, dict[str, Any]]] = []
        for name, args in plan:
            kept = {key: value for key, value in args.items() if key != argument}
            if argument in args and _requires(tools, name, argument):
                kept[argument] = default
            forgotten.append((name, kept))
        return forgotten


def _requires(tools: list[dict[str, Any]], tool: str, argument: str) -> bool:
    """Whether the offered `tool`'s input schema lists `argument` as required."""
    schema = next((offered.get("input_schema") or {} for offered in tools if offered.get("name") == tool), {})
    return argument in (schema.get("required") or [])
