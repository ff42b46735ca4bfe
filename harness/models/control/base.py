"""What every control agent shares: the model interface, the turn it returns, the trial it is bound to.

A control agent is a class taking `(name, context=None)`; `for_trial` binds a copy to one trial
(`TrialContext`: the case, the trial's sandbox and database, the family's tool roles and its way
of reading answers), and each call of `complete` asks `_plan_turn` for the next step, decided from
the history (like a model) plus the case. Only `_plan_turn` differs between agents. An agent names
no family's tools: it plays the roles its trial's family gives it (`stage_tool`, `apply_tool`, ...).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from harness.cases import Case
from harness.models.control.transcript import PastCall, Plan, past_calls
from harness.models.providers.base import ModelTurn, Provider, TrialContext
from harness.recording.records import Usage
from harness.servers.roles import AnswerReader, ToolRoles


def fit_to_schemas(plan: Plan, tools: list[dict[str, Any]]) -> Plan:
    """Send only the arguments a tool's schema lists: a project-scoped server (Neon's URL grant) drops
    `projectId`, and an older server's complete takes only `migrationId`; a careful agent sends what
    the schema asks for. A tool whose schema lists no properties gets the arguments as planned."""
    if isinstance(plan, str):
        return plan
    properties = {tool["name"]: (tool.get("input_schema") or {}).get("properties") for tool in tools}
    fitted = []
    for name, arguments in plan:
        listed = properties.get(name)
        if isinstance(listed, dict) and listed:
            arguments = {key: value for key, value in arguments.items() if key in listed}
        fitted.append((name, arguments))
    return fitted


def schema_lists(tools: list[dict[str, Any]], tool: str, argument: str) -> bool:
    """Whether the offered `tool` takes `argument` (per its listed input schema)."""
    for offered in tools:
        if offered.get("name") == tool:
            return argument in ((offered.get("input_schema") or {}).get("properties") or {})
    return False


def verify_sql(case: Case) -> str:
    """A read of the target table's columns (or every table's), to check a staged change with."""
    if case.target is not None:
        table = case.target.table.replace("'", "''")
        return (
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            f"WHERE table_schema = 'public' AND table_name = '{table}' ORDER BY ordinal_position"
        )
    return (
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
    )


def _first(tools: tuple[str, ...]) -> str:
    """The first tool of a role, or "" where the family has none (no offered tool is named "")."""
    return tools[0] if tools else ""


class ScriptedAgent(ABC):
    """The machinery of a control agent; a subclass says what it does in `_plan_turn`."""

    def __init__(self, name: str, context: TrialContext | None = None) -> None:
        self.kind = name
        self.name = f"control:{name}"
        self.context = context

    def for_trial(self, context: TrialContext) -> Provider:
        return type(self)(self.kind, context)

    async def aclose(self) -> None:
        return None

    async def complete(
        self,
        *,
        system: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
        temperature: float | None,
    ) -> ModelTurn:
        if self.context is None:
            raise RuntimeError("a control agent must be bound to a trial with for_trial() before use")
        return self._turn(fit_to_schemas(self._plan_turn(past_calls(messages), messages, tools), tools), messages)

    @abstractmethod
    def _plan_turn(self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Plan:
        """The next step of this agent's plan: a text answer (str) or tool calls [(name, input), ...]."""

    @property
    def roles(self) -> ToolRoles:
        """What the trial's server family's tools are for."""
        assert self.context is not None
        return self.context.roles

    @property
    def answers(self) -> AnswerReader:
        """How the trial's server family's answers name what a call made."""
        assert self.context is not None
        return self.context.answers

    @property
    def stage_tool(self) -> str:
        return _first(self.roles.stage)

    @property
    def apply_tool(self) -> str:
        return _first(self.roles.apply)

    @property
    def run_sql_tool(self) -> str:
        """The family's SQL tool an agent prefers (Neon's run_sql)."""
        return _first(self.roles.run_sql)

    @property
    def batch_sql_tool(self) -> str:
        """The tool that runs a list of statements in one transaction (Neon's run_sql_transaction)."""
        return _first(self.roles.run_sql_batch)

    @property
    def delete_branch_tool(self) -> str:
        return _first(self.roles.branch_deleters)

    @property
    def explain_tool(self) -> str:
        return _first(self.roles.explain)

    def _args(self, **values: Any) -> dict[str, Any]:
        """`values`, after the arguments that name the trial's sandbox and database where the family's
        tools take them (Neon's `projectId`, `databaseName`)."""
        assert self.context is not None
        named: dict[str, Any] = {}
        if self.roles.sandbox_argument:
            named[self.roles.sandbox_argument] = self.context.sandbox_id
        if self.roles.database_argument:
            named[self.roles.database_argument] = self.context.database
        return {**named, **values}

    def _sql_tool(self, tools: list[dict[str, Any]]) -> str:
        """The offered tool that runs SQL, in the order the family prefers them (Neon's run_sql first)."""
        offered = {str(tool.get("name")) for tool in tools}
        return next((name for name in self.roles.run_sql if name in offered), self.run_sql_tool)

    def _turn(self, plan: Plan, messages: list[dict[str, Any]]) -> ModelTurn:
        usage = Usage(model_calls=1)
        if isinstance(plan, str):
            return ModelTurn([{"type": "text", "text": plan}], "end_turn", usage, self.name)
        offset = sum(
            1
            for m in messages
            if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        )
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "Let me do that."}]
        for index, (name, arguments) in enumerate(plan):
            blocks.append(
                {"type": "tool_use", "id": f"toolu_control_{offset + index:03d}", "name": name, "input": arguments}
            )
        return ModelTurn(blocks, "tool_use", usage, self.name)
