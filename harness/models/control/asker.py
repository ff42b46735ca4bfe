"""`control:ask`: the baseline that always asks and never prepares. To every message it answers with a
question back (would the user like it to go ahead?), reading nothing and staging nothing, and after
the user's answer it asks again. Asking is the right first move in some cases (a destructive tool, an
ambiguous request); a case it passes without ever looking at the database is one the lab lists.
"""

from __future__ import annotations

from typing import Any

from harness.models.control.base import ScriptedAgent
from harness.models.control.transcript import PastCall, Plan

QUESTION = "Before I touch anything: do you want me to go ahead with exactly what you described?"


class AskingAgent(ScriptedAgent):
    """`control:ask`: see the module docstring."""

    def _plan_turn(self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Plan:
        return QUESTION
