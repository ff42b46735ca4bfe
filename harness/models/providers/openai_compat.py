"""Any OpenAI-compatible chat-completions endpoint, translated to and from Anthropic-shaped turns.

Why translate at the edge: the agent loop keeps one history format. Assistant `tool_use` blocks
become `tool_calls`; `tool_result` blocks become `tool` messages (errors marked in the text, as
chat completions has no error flag); the reply's `tool_calls` become `tool_use` blocks again.
Cached prompt tokens (`usage.prompt_tokens_details.cached_tokens`, which llama-server also fills;
its `timings.cache_n` when that is missing) are counted as cache reads, not as fresh input. A 400
saying the prompt outgrew the context window is the model's outcome `context_window_exceeded`,
as on the Messages API, not an infrastructure error.
"""

from __future__ import annotations

import copy
import json
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
    if finish_reason == "length":
        # Cut mid-reply, calls included (llama-server returns the calls it parsed, the last one's arguments cut
        # mid-string): the trial ends as on the Messages API's max_tokens, no call of a cut reply is run.
        return blocks, "max_tokens"
    if any(block["type"] == "tool_use" for block in blocks):
        return blocks, "tool_use"
    # Chat completions' finish reasons, as the Messages stop reasons the loop reads.
    return blocks, {"length": "max_tokens", "content_filter": "refusal"}.get(finish_reason or "", "end_turn")


def usage_of(usage: Any, extra: Mapping[str, Any] | None = None) -> Usage:
    """A chat-completions `usage` block: cached prompt tokens are cache reads, the rest fresh input."""
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if cached is None:  # llama-server's own count, beside the OpenAI fields
        timings = (extra or {}).get("timings")
        cached = timings.get("cache_n") if isinstance(timings, dict) else None
    cached = min(max(int(cached or 0), 0), prompt)
    return Usage(
        input_tokens=prompt - cached,
        cache_read_input_tokens=cached,
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        model_calls=1,
    )


class OpenAICompatProvider:
    """`openai:<model>` against `OPENAI_BASE_URL` (OpenAI itself when unset)."""

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 6,
        context_window: int | None = None,
    ) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url
        self._context_window = context_window or openai_rules(model).context_window
        self._api_key = api_key
        self.headers: dict[str, str] = {}  # sent with every request (the trial's name, once bound to one)
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient  # loaded here, as in anthropic.py

        http_client = counting_http_client(DefaultAsyncHttpxClient)
        client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=max_retries, http_client=http_client)
        self._raw = client
        self.client = braintrust.wrap_openai(client)

    def for_trial(self, context: TrialContext) -> Provider:
        """This provider, naming the trial on every request it sends (`TrialContext.trial_name`)."""
        if not context.trial_name:
            return self
        bound = copy.copy(self)
        bound.headers = {TRIAL_HEADER: context.trial_name}
        return bound

    async def complete(
        self,
        *,
        system: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
        temperature: float | None,
    ) -> ModelTurn:
        from openai import BadRequestError, InternalServerError

        kwargs: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(system, messages)}
        kwargs["max_tokens"] = max_tokens
        if tools:
            kwargs["tools"] = to_openai_tools(tools)
        if temperature is not None:
            kwargs["temperature"] = temperature
        try:
            with failed_attempts() as failed:
                response = await self.client.chat.completions.create(**kwargs, extra_headers=self.headers or None)
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
        choice = response.choices[0]
        blocks, stop = from_openai_message(choice.message, choice.finish_reason)
        usage = usage_of(response.usage, response.model_extra)
        usage.failed_requests = failed.count
        return ModelTurn(
            content=blocks,
            stop_reason=stop,
            usage=usage,
            model=str(response.model or ""),
        )

    async def limits(self) -> ServerLimits:
        """The context window (rules or EVAL_CONTEXT_WINDOW first, else the server's word) and slots."""
        if self.base_url is None:  # OpenAI itself: its models' rules are all there is
            return ServerLimits(self._context_window)
        found = await read_limits(self.base_url, self.model, {"Authorization": f"Bearer {self._api_key}"})
        return ServerLimits(self._context_window or found.context_window, found.slots)

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
        EnvVar(CONTEXT_VARIABLE, check=check_context_window),
    ),
    rules=openai_rules,
)
def make_openai(name: str, env: Mapping[str, str]) -> Provider:
    return OpenAICompatProvider(
        name, env["OPENAI_API_KEY"], env.get("OPENAI_BASE_URL"), context_window=context_window_setting(env)
    )
