"""`control:explore`: the read-only baseline. It looks around (the project, the tables, the target
table's columns, a count of its rows) with read tools and read-only SQL, then reports what it saw and
changes nothing, whatever was asked. It passes a read question only where reading anything at all is
enough for the deterministic scores; the lab lists those cases.
"""

from __future__ import annotations

from typing import Any

from harness.models.control.base import ScriptedAgent, verify_sql
from harness.models.control.transcript import PastCall, Plan, excerpt

LOOKS = ("describe_project", "get_database_tables")


class ExploringAgent(ScriptedAgent):
    """`control:explore`: see the module docstring."""

    def _plan_turn(self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Plan:
        assert self.context is not None
        if not calls:
            offered = {str(tool.get("name")) for tool in tools}
            looks: list[tuple[str, dict[str, Any]]] = [(name, self._args()) for name in LOOKS if name in offered]
            looks.append((self._sql_tool(tools), self._args(sql=verify_sql(self.context.case))))
            target = self.context.case.target
            if target is not None:
                table = target.table.replace('"', '""')
                looks.append((self._sql_tool(tools), self._args(sql=f'SELECT count(*) FROM "{table}"')))
            return looks
        findings = "\n".join(f"- {call.name}: {excerpt(call.result, 200)}" for call in calls[-4:])
        return f"Here is what I found; I have not changed anything.\n{findings}"
