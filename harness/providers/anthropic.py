"""Anthropic's Messages API through the official SDK, traced by Braintrust.

The SDK retries 429, 529 and 5xx itself (`max_retries`, honouring retry-after headers);
`ANTHROPIC_BASE_URL` points it elsewhere (a stand-in server in tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import braintrust
from anthropic import AsyncAnthropic

from harness.model_rules import anthropic_rules
from harness.providers.base import ModelTurn, Provider, TrialContext
from harness.providers.registry import EnvVar, provider
from harness.records import Usage


def _block(block: Any) -> dict[str, Any]:
    """A response content block as a plain dict that can be sent back in the history."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input or {})}
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


class AnthropicProvider:
    """`anthropic:<model>`."""

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 6,
        timeout: float = 300.0,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        client = AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout)
        self._raw = client
        self.client = braintrust.wrap_anthropic(client)

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
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if system:
            kwargs["system"] = system
        if temperature is not None:
            # anthropic 2.x has no `temperature` argument; the wire field still exists for models that take it.
            kwargs["extra_body"] = {"temperature": temperature}
        response = await self.client.messages.create(**kwargs)
        usage = response.usage
        return ModelTurn(
            content=[_block(block) for block in response.content],
            stop_reason=str(response.stop_reason or "end_turn"),
            usage=Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_read_input_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
                cache_creation_input_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
                model_calls=1,
            ),
            model=str(response.model),
        )

    async def aclose(self) -> None:
        await self._raw.close()


@provider(
    "anthropic",
    env=(EnvVar("ANTHROPIC_API_KEY", secret=True, required=True), EnvVar("ANTHROPIC_BASE_URL")),
    rules=anthropic_rules,
)
def make_anthropic(name: str, env: Mapping[str, str]) -> Provider:
    return AnthropicProvider(name, env["ANTHROPIC_API_KEY"], env.get("ANTHROPIC_BASE_URL"))
