"""Anthropic's Messages API through the official SDK, traced by Braintrust.

Every request is built from the model's rules (`harness/models/rules.py`): no sampling parameter
for a model that refuses one, no manual thinking budget (5.x models think adaptively by default),
and the tool definitions and system prompt marked for prompt caching, as they are resent on every
call. Replies go back into the history as they came: a signed `thinking` block must return
unchanged. The SDK retries 429, 529 and 5xx itself (`max_retries`, honouring retry-after headers);
`ANTHROPIC_BASE_URL` points it elsewhere (a stand-in server in tests, or a local open-weights
model behind llama.cpp's `llama-server`, which speaks the Messages API). A model that is not Claude
gets none of Claude's own fields: no `cache_control` marks (llama-server drops them; a stricter
server may not), a plain-string system prompt. A 400 saying the prompt outgrew the context window
ends the trial as `context_window_exceeded`, as the stop reason `model_context_window_exceeded` does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import braintrust

from harness.mcp.client import TRIAL_HEADER
from harness.models.attempts import counting_http_client, failed_attempts
from harness.models.endpoint import (
    CONTEXT_VARIABLE,
    ServerLimits,
    check_context_window,
    context_window_setting,
    overflow_detail,
    read_limits,
    unparsed_call_detail,
)
from harness.models.providers.base import ModelTurn, Provider, TrialContext
from harness.models.providers.registry import EnvVar, provider
from harness.models.rules import ModelRules, anthropic_rules
from harness.recording.records import Usage

CACHE = {"type": "ephemeral"}  # the default 5-minute prompt cache


def _block(block: Any) -> dict[str, Any]:
    """A response content block as a plain dict that can be sent back in the history."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input or {})}
    # thinking / redacted_thinking and anything newer: every field as received (the signature too).
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


def cached_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools with a cache breakpoint on the last one: the whole tool list is one cached prefix."""
    if not tools:
        return []
    return [*tools[:-1], {**tools[-1], "cache_control": CACHE}]


def usage_of(usage: Any) -> Usage:
    details = getattr(usage, "output_tokens_details", None)
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_input_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
        cache_creation_input_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
        thinking_tokens=getattr(details, "thinking_tokens", None) or 0,
        model_calls=1,
    )


class AnthropicProvider:
    """`anthropic:<model>`."""

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 6,
        timeout: float = 300.0,
        rules: ModelRules | None = None,
        context_window: int | None = None,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self.rules = rules or anthropic_rules(model)
        self.base_url = base_url
        self.claude = model.startswith("claude-") or self.rules.price is not None
        self._context_window = context_window or self.rules.context_window
        self._api_key = api_key
        self.headers: dict[str, str] = {}  # sent with every request (the trial's name, once bound to one)
        # The SDK loads here, not when the provider registers: every `braintrust eval` (a control-agent
        # run included) discovers every provider, and importing the SDK costs about a second of CPU.
        from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

        client = AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
            http_client=counting_http_client(DefaultAsyncHttpxClient),
        )
        self._raw = client
        self.client = braintrust.wrap_anthropic(client)

    def for_trial(self, context: TrialContext) -> Provider:
        """This provider, naming the trial on every request it sends (`TrialContext.trial_name`)."""
        if not context.trial_name:
            return self
        bound = copy.copy(self)
        bound.headers = {TRIAL_HEADER: context.trial_name}
        return bound

    def request(
        self,
        *,
        system: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
        temperature: float | None,
    ) -> dict[str, Any]:
        """The keyword arguments of one `messages.create` call, built from the model's rules."""
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        if tools:
            kwargs["tools"] = cached_tools(tools) if self.claude else tools
        if system:
            kwargs["system"] = [{"type": "text", "text": system, "cache_control": CACHE}] if self.claude else system
        if temperature is not None:
            refusal = self.rules.refusal(temperature)
            if refusal:
                raise ValueError(refusal)  # configuration stops this before any trial; never send it
            # anthropic>=1.0 dropped the `temperature` keyword (its MIGRATION guide passes the removed
            # sampling fields as body fields); it is still a top-level request field for the models
            # whose rules accept it, and only those get it.
            kwargs["extra_body"] = {"temperature": temperature}
        return kwargs

    async def complete(
        self,
        *,
        system: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
        temperature: float | None,
    ) -> ModelTurn:
        from anthropic import BadRequestError, InternalServerError

        kwargs = self.request(
            system=system, messages=messages, tools=tools, max_tokens=max_tokens, temperature=temperature
        )
        try:
            with failed_attempts() as failed:
                response = await self.client.messages.create(**kwargs, extra_headers=self.headers or None)
        except BadRequestError as error:
            detail = overflow_detail(error.status_code, error.body, error.message)
            if detail is None:
                raise
            return ModelTurn(
                content=[],
                stop_reason="model_context_window_exceeded",
                stop_detail=detail,
                usage=Usage(failed_requests=failed.count),
            )
        except InternalServerError as error:  # after the SDK's retries: the model wrote it the same way each time
            detail = unparsed_call_detail(error.status_code, error.body, error.message)
            if detail is None:
                raise
            return ModelTurn(
                content=[],
                stop_reason="tool_call_unparsed",
                stop_detail=detail,
                usage=Usage(failed_requests=failed.count),
            )
        usage = usage_of(response.usage)
        usage.failed_requests = failed.count
        return ModelTurn(
            content=[_block(block) for block in response.content],
            stop_reason=str(response.stop_reason or "end_turn"),
            usage=usage,
            model=str(response.model),
        )

    async def limits(self) -> ServerLimits:
        """The context window (rules or EVAL_CONTEXT_WINDOW first, else the server's word) and slots."""
        if self.base_url is None or self.claude:  # Anthropic's API: the rules table knows its models
            return ServerLimits(self._context_window)
        found = await read_limits(self.base_url, self.model, {"x-api-key": self._api_key})
        return ServerLimits(self._context_window or found.context_window, found.slots)

    async def aclose(self) -> None:
        await self._raw.close()


@provider(
    "anthropic",
    env=(
        EnvVar("ANTHROPIC_API_KEY", secret=True, required=True),
        EnvVar("ANTHROPIC_BASE_URL"),
        EnvVar(CONTEXT_VARIABLE, check=check_context_window),
    ),
    rules=anthropic_rules,
)
def make_anthropic(name: str, env: Mapping[str, str]) -> Provider:
    return AnthropicProvider(
        name, env["ANTHROPIC_API_KEY"], env.get("ANTHROPIC_BASE_URL"), context_window=context_window_setting(env)
    )
