"""The one interface every model speaks: Anthropic-shaped history in, one Anthropic-shaped turn out.

Why Anthropic's shape: it is the richest (parallel tool_use blocks, tool_result with is_error),
so the agent loop has one format, and other providers translate at their edge. Control agents
speak the same interface, so the loop cannot tell a scripted agent from a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.cases import Case
from harness.recording.records import Usage
from harness.servers.roles import AnswerReader, ToolRoles


@dataclass
class ModelTurn:
    """One model response: content blocks (text / tool_use dicts), why it stopped, tokens used."""

    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""  # the model the response says answered (a local server may answer to any name)
    stop_detail: str | None = None  # why it stopped, when the server said more than a stop reason

    @property
    def text(self) -> str:
        return "\n".join(block["text"] for block in self.content if block.get("type") == "text").strip()

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [block for block in self.content if block.get("type") == "tool_use"]


@dataclass(frozen=True)
class TrialContext:
    """What a trial's provider may know beyond the messages (only control agents use it)."""

    case: Case
    sandbox_id: str  # what the model is pointed at (Neon: the trial's project); `{project_id}` in a case
    database: str
    roles: ToolRoles  # what the server family's tools are for
    answers: AnswerReader  # how the family's answers name what a call made (ids of a staged change)
    trial_index: int = 0  # seeds a control agent's draws, so a rerun repeats each trial
    # `<run id>/<case id>/<trial index>/<random>`: sent as the `X-Eval-Trial` header on each model
    # request, as on each MCP request, so a server's logs (or a scripted stand-in) can tell trials apart.
    trial_name: str = ""


class Provider(Protocol):
    """A model behind the turn interface."""

    name: str  # "provider:model"

    def for_trial(self, context: TrialContext) -> Provider:
        """The provider to use for one trial (control agents bind the case; models return self)."""
        ...

    async def complete(
        self,
        *,
        system: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
        temperature: float | None,
    ) -> ModelTurn: ...

    async def aclose(self) -> None: ...
