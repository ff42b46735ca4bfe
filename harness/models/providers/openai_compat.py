"""Any OpenAI-compatible chat-completions endpoint, translated to and from Anthropic-shaped turns.

Why translate at the edge: the agent loop keeps one history format. Assistant `tool_use` blocks
become `tool_calls`; `tool_result` blocks become `tool` messages (errors marked in the text, as
chat completions has no error flag); the reply's `tool_calls` become `tool_use` blocks again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import braintrust
from openai import AsyncOpenAI

from harness.models.providers.base import ModelTurn, Provider, TrialContext
from harness.models.providers.registry import EnvVar, provider
from harness.models.rules import openai_rules
from harness.recording.records import Usage


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [
        block.get("text", "") for block in content or [] if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n".join(parts)


def to_openai_messages(system: str | None, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic-shaped history as chat-completions messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        content = message["content"]
        if message["role"] == "assistant":
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            entry: dict[str, Any] = {"role": "assistant", "content": _text_of(blocks) or None}
            calls = [
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": block["name"], "arguments": json.dumps(block.get("input", {}))},
                }
                for block in blocks
                if block.get("type") == "tool_use"
            ]
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        if isinstance(content, str):
            out.append({"role": "user", "content": content})
            continue
        for block in content:
            if block.get("type") == "tool_result":
                text = _text_of(block.get("content"))
                if block.get("is_error"):
                    text = f"[tool error] {text}"
                out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
        text = _text_of(content)
        if text:
            out.append({"role": "user", "content": text})
    return out


def to_openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
        }
        for t in tools
    ]


def from_openai_message(message: Any, finish_reason: str | None) -> tuple[list[dict[str, Any]], str]:
    """A chat-completions reply as Anthropic content blocks and stop reason."""
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls or []:
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"_unparsable_arguments": call.function.arguments}
        if not isinstance(arguments, dict):
            arguments = {"_unparsable_arguments": call.function.arguments}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.function.name, "input": arguments})
    if any(block["type"] == "tool_use" for block in blocks):
        return blocks, "tool_use"
    # Chat completions' finish reasons, as the Messages stop reasons the loop reads.
    return blocks, {"length": "max_tokens", "content_filter": "refusal"}.get(finish_reason or "", "end_turn")


class OpenAICompatProvider:
    """`openai:<model>` against `OPENAI_BASE_URL` (OpenAI itself when unset)."""

    def __init__(self, model: str, api_key: str, base_url: str | None = None, max_retries: int = 6) -> None:
        self.model = model
        self.name = f"openai:{model}"
        client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=max_retries)
        self._raw = client
        self.client = braintrust.wrap_openai(client)

    def for_trial(self, context: TrialContext) -> Provider:
        return self

    async def complete(
        self,
        *,
        system: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
        temperature: float | None,
    ) -> ModelTurn:
        kwargs: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(system, messages)}
        kwargs["max_tokens"] = max_tokens
        if tools:
            kwargs["tools"] = to_openai_tools(tools)
        if temperature is not None:
            kwargs["temperature"] = temperature
        response = await self.client.chat.completions.create(**kwargs)
        choice = response.choices[0]
        blocks, stop = from_openai_message(choice.message, choice.finish_reason)
        usage = response.usage
        return ModelTurn(
            content=blocks,
            stop_reason=stop,
            usage=Usage(
                input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                output_tokens=getattr(usage, "completion_tokens", 0) or 0,
                model_calls=1,
            ),
            model=str(response.model or self.model),
        )

    async def aclose(self) -> None:
        await self._raw.close()


@provider(
    "openai",
    env=(
        EnvVar(
            "OPENAI_API_KEY",
            secret=True,
            required=True,
            hint=" (any non-empty value for endpoints without auth)",
        ),
        EnvVar("OPENAI_BASE_URL"),
    ),
    rules=openai_rules,
)
def make_openai(name: str, env: Mapping[str, str]) -> Provider:
    return OpenAICompatProvider(name, env["OPENAI_API_KEY"], env.get("OPENAI_BASE_URL"))
