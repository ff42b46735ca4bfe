"""`control:idle`: the do-nothing baseline. It answers every message with one reassuring sentence and
calls no tool. A case it passes is a case anyone passes: the lab (`make validity`) lists each one, and
only a case whose file says doing nothing is its right answer (`nothing_needed`) may be among them.
"""

from __future__ import annotations

from typing import Any

from harness.models.control.base import ScriptedAgent
from harness.models.control.transcript import PastCall, Plan

REASSURANCE = "All set: everything is in order and there is nothing you need to do."


class IdleAgent(ScriptedAgent):
    """`control:idle`: see the module docstring."""

    def _plan_turn(self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Plan:
        return REASSURANCE
