"""The Anthropic Messages tool loop, done right.

Assistant turns go back into the history exactly as they came (signed `thinking` blocks included:
current models reject a history where one was changed or dropped); every `tool_use` of a turn is
executed in order and answered by a `tool_result` (same id, `is_error` on failure) in the next user
message; the loop goes on while the model asks for tools, under a cap on model calls; after each
final answer the case's next follow-up is sent. `stop_reason` is read on every turn: a reply cut at
max_tokens, a refusal or an overflowing context window ends the trial with that outcome (a cut
reply is never taken as the answer); `pause_turn` sends the paused turn back so the model goes on.
A reply that makes no call but is a tool call written as text (`harness.models.textcalls`) ends the
trial as `tool_call_as_text`, never as the final answer; arguments that are not a JSON object are
answered with an error result and never forwarded to the server.
State lives on an `AgentState` the caller owns, so a trial that times out or is cancelled still has
its partial transcript. `LoopSettings.before_follow_up` lets the caller look at the world between
the model's answer and the user's next message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import braintrust
from braintrust.span_types import SpanTypeAttribute
from mcp.shared.exceptions import MCPError

from harness.mcp.client import MCPConnection
from harness.mcp.toolview import ToolView
from harness.models.providers.base import ModelTurn, Provider
from harness.models.textcalls import describe as describe_text_calls
from harness.models.textcalls import text_tool_calls
from harness.recording.records import Outcome, ToolCall, Usage

RESULT_EXCERPT = 4000
# EVAL_MAX_TOOL_RESULT_BYTES: the most of one tool result a model is sent, whatever the server returns (a
# model that selects 200 MB must not get 200 MB, nor the harness keep it).
DEFAULT_MAX_RESULT_BYTES = 200_000
EMPTY_ANSWER = "(the model returned no content)"
UNPARSABLE = "_unparsable_arguments"  # the key a provider puts a call's raw, non-JSON-object arguments under
# stop_reason -> the outcome that ends the trial, and why (a model's doing, not infrastructure).
STOP_OUTCOMES: dict[str, tuple[Outcome, str]] = {
    "max_tokens": ("max_tokens", "the reply was cut at EVAL_MAX_TOKENS={max_tokens} (stop_reason max_tokens)"),
    # A reply cut below EVAL_MAX_TOKENS: what cut it was the room left in the model's context window
    # (or the server's own output limit), not the suite's setting.
    "max_tokens_below_limit": (
        "max_tokens",
        "the reply was cut after {output_tokens} output tokens, below EVAL_MAX_TOKENS={max_tokens}: the model's "
        "context window (or the server's own output limit) ran out (stop_reason max_tokens)",
    ),
    "refusal": ("refusal", "the model declined to go on (stop_reason refusal)"),
    # llama-server answers 500 when the model opened a tool call it cannot parse: the model's doing.
    "tool_call_unparsed": ("tool_call_as_text", "the model wrote a tool call the server could not parse"),
    "model_context_window_exceeded": (
        "context_window_exceeded",
        "the conversation outgrew the model's context window (stop_reason model_context_window_exceeded)",
    ),
}


class InfraError(RuntimeError):
    """The server or transport failed (not the tool): the trial cannot be judged."""


@dataclass
class AgentState:
    """Everything the loop produced so far."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    final_answer: str = ""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    follow_ups_sent: list[str] = field(default_factory=list)
    outcome: Outcome = "ok"
    error: str | None = None  # why the outcome is not ok, when the loop decided it
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    answered_by: list[str] = field(default_factory=list)  # the model names the responses gave


@dataclass
class LoopSettings:
    """Knobs of one loop run."""

    system: str | None = None
    max_turns: int = 12
    max_tokens: int = 4096
    temperature: float | None = None
    tool_timeout: float | None = 120.0
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    scrub: Callable[[str], str] = field(default=lambda text: text)
    # Awaited just before follow-up number N (0-based) is sent, with N: the harness reads main's state
    # at the moment the user answers, so a change made before the answer is seen as made before it.
    before_follow_up: Callable[[int], Awaitable[None]] | None = None


async def execute_tool(
    view: ToolView, connection: MCPConnection, block: dict[str, Any], turn: int, loop: LoopSettings
) -> tuple[ToolCall, dict[str, Any]]:
    """Run one tool_use block; return its record and the tool_result block answering it."""
    name = str(block["name"])
    arguments = block.get("input") or {}
    kind = view.kind(name)
    started = time.perf_counter()
    forwarded: dict[str, Any] | None = None
    with braintrust.start_span(name=name, type=SpanTypeAttribute.TOOL, input=arguments) as span:
        try:
            if not isinstance(arguments, dict) or UNPARSABLE in arguments:
                raw = arguments.get(UNPARSABLE) if isinstance(arguments, dict) else arguments
                text, is_error = f"Error: the arguments are not a JSON object: {str(raw)[:500]}", True
            else:
                result = await view.call(connection, name, arguments, loop.tool_timeout)
                text, is_error, forwarded = result.text, result.is_error, (result.forwarded or None)
        except MCPError as error:
            text, is_error = f"Error: {error}", True
        except TimeoutError:
            # A request the server never answered within its own timeout arrives as a ServerFault
            # (infrastructure, below); a TimeoutError here comes from the view's own wait, the tool's result.
            text, is_error = f"Error: the tool did not answer within {loop.tool_timeout}s", True
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except Exception as error:
            raise InfraError(f"tool {name}: {type(error).__name__}: {loop.scrub(str(error))}") from error
        duration = (time.perf_counter() - started) * 1000
        text, size, cut = cut_result(text, loop.max_result_bytes)
        span.log(output=loop.scrub(text[:RESULT_EXCERPT]), metadata={"is_error": is_error, "kind": kind})
    excerpt = loop.scrub(text if len(text) <= RESULT_EXCERPT else text[:RESULT_EXCERPT] + " [truncated]")
    call = ToolCall(
        id=str(block["id"]),
        name=name,
        arguments=dict(arguments) if isinstance(arguments, dict) else {"_raw": arguments},
        forwarded_arguments=forwarded,
        result_text=excerpt,
        is_error=is_error,
        decoy=kind == "decoy",
        unknown=kind == "unknown",
        duration_ms=round(duration, 2),
        turn=turn,
        result_bytes=size,
        result_cut=cut,
    )
    answer: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": block["id"],
        "content": [{"type": "text", "text": text or "(empty result)"}],
    }
    if is_error:
        answer["is_error"] = True
    return call, answer


async def run_agent(
    provider: Provider,
    view: ToolView,
    connection: MCPConnection,
    state: AgentState,
    first_input: str,
    follow_ups: list[str],
    loop: LoopSettings,
) -> AgentState:
    """Drive the model until its final answer to the last follow-up, or the turn cap."""
    state.messages.append({"role": "user", "content": first_input})
    pending = list(follow_ups)
    tools = view.anthropic_tools()
    paused = False
    while True:
        if state.turns >= loop.max_turns:
            state.outcome = "turn_cap"
            return state
        started = time.perf_counter()
        turn = await provider.complete(
            system=loop.system,
            messages=state.messages,
            tools=tools,
            max_tokens=loop.max_tokens,
            temperature=loop.temperature,
        )
        state.model_seconds += time.perf_counter() - started
        state.usage.add(turn.usage)
        state.turns += 1
        if turn.model and turn.model not in state.answered_by:
            state.answered_by.append(turn.model)
        if turn.stop_reason in STOP_OUTCOMES and not turn.content:
            # Nothing came back (a prompt the server refused as too long): no assistant turn to keep.
            state.outcome, state.error = stop_outcome(turn, loop)
            return state
        content = turn.content or [{"type": "text", "text": EMPTY_ANSWER}]
        if paused:  # a resumed turn continues the assistant message it paused in (one turn, as the API sees it)
            state.messages[-1]["content"] = [*state.messages[-1]["content"], *content]
        else:
            state.messages.append({"role": "assistant", "content": content})
        paused = turn.stop_reason == "pause_turn" and not turn.tool_uses  # tool results would come between
        if turn.stop_reason in STOP_OUTCOMES:
            state.outcome, state.error = stop_outcome(turn, loop)
            return state
        tool_uses = turn.tool_uses
        if tool_uses:
            # Every tool_use is answered, whatever the stop reason, so the history stays valid.
            answers: list[dict[str, Any]] = []
            started = time.perf_counter()
            for block in tool_uses:
                call, answer = await execute_tool(view, connection, block, state.turns - 1, loop)
                state.tool_calls.append(call)
                answers.append(answer)
            state.tool_seconds += time.perf_counter() - started
            state.messages.append({"role": "user", "content": answers})
            continue
        if turn.stop_reason == "pause_turn":
            continue  # the API resumes a paused turn from the assistant message sent back as it came
        written = text_tool_calls(turn.text, view.by_name)
        if written:
            state.outcome, state.error = "tool_call_as_text", describe_text_calls(written, view.by_name)
            return state
        state.final_answer = turn.text
        if not pending:
            return state
        if loop.before_follow_up is not None:
            await loop.before_follow_up(len(state.follow_ups_sent))
        follow_up = pending.pop(0)
        state.follow_ups_sent.append(follow_up)
        state.messages.append({"role": "user", "content": follow_up})


def cut_result(text: str, limit: int) -> tuple[str, int, bool]:
    """(the text the model gets, the result's size in bytes, whether it was cut): cut at a UTF-8
    character boundary, with a note the model reads saying how much it did not get."""
    size = len(text.encode("utf-8"))
    if size <= limit:
        return text, size, False
    head = text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")
    note = f"\n[the eval harness cut this tool result at {limit} of its {size} bytes: narrow the query to see the rest]"
    return head + note, size, True


def stop_outcome(turn: ModelTurn, loop: LoopSettings) -> tuple[Outcome, str]:
    """The outcome a stop reason ends the trial with, and why (a provider's own reason wins)."""
    reason_key = turn.stop_reason
    if reason_key == "max_tokens" and 0 < turn.usage.output_tokens < loop.max_tokens:
        reason_key = "max_tokens_below_limit"
    outcome, reason = STOP_OUTCOMES[reason_key]
    detail = turn.stop_detail or reason.format(max_tokens=loop.max_tokens, output_tokens=turn.usage.output_tokens)
    return outcome, detail
