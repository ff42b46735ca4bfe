"""`control:refuse`: the baseline that declines everything, calling no tool. Declining is right where
the session's grant forbids the request (the `workflow:refuse` cases); anywhere else a case it passes
is one the lab lists.
"""

from __future__ import annotations

from typing import Any

from harness.models.control.base import ScriptedAgent
from harness.models.control.transcript import PastCall, Plan

REFUSAL = "I'm sorry, but I can't help with that request."


class RefusingAgent(ScriptedAgent):
    """`control:refuse`: see the module docstring."""

    def _plan_turn(self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Plan:
        return REFUSAL
