"""Providers over the wire: the real Anthropic SDK against the scripted fake, and OpenAI translation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from harness.models.providers.anthropic import AnthropicProvider
from harness.models.providers.openai_compat import OpenAICompatProvider, to_openai_messages
from harness.servers.neon.answers import migration_details
from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.fakes.jsonserver import JsonServer, Request, Response

TOOLS = [{"name": "run_sql", "description": "Runs SQL.", "input_schema": {"type": "object", "properties": {}}}]


async def test_anthropic_provider_round_trip_with_retry_after_529() -> None:
    with FakeAnthropic([reply(text("hi"), tool_use("run_sql", {"sql": "select 1"}))], failures=[529, 429]) as fake:
        provider = AnthropicProvider("claude-sonnet-4-6", "test-key", base_url=fake.url, max_retries=3)
        turn = await provider.complete(
            system="sys", messages=[{"role": "user", "content": "go"}], tools=TOOLS, max_tokens=100, temperature=0.0
        )
        await provider.aclose()
        state = httpx.get(fake.url + "/_fake/state").json()  # what a process holding only the URL sees
    assert (state["requests"], state["violations"], state["refused"]) == (3, [], [])
    fake.assert_clean()
    assert fake.errors_served == [529, 429]
    assert len(fake.bodies) == 3
    assert turn.stop_reason == "tool_use"
    assert turn.tool_uses[0]["name"] == "run_sql" and turn.tool_uses[0]["input"] == {"sql": "select 1"}
    assert turn.usage.input_tokens > 0 and turn.usage.model_calls == 1
    sent = fake.bodies[-1]
    assert sent["system"] == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert sent["temperature"] == 0.0 and sent["tools"] == [{**TOOLS[0], "cache_control": {"type": "ephemeral"}}]


async def test_fake_rejects_a_tool_use_without_tool_result() -> None:
    from anthropic import BadRequestError  # here: the SDK costs 2 s to import, every worker collects this file

    broken: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("run_sql", {}, id="toolu_1")]},
        {"role": "user", "content": "I ignored your tool call"},
    ]
    with FakeAnthropic([reply(text("x"))] * 3) as fake:
        provider = AnthropicProvider("claude-sonnet-4-6", "test-key", base_url=fake.url, max_retries=0)
        with pytest.raises(BadRequestError):
            await provider.complete(system=None, messages=broken, tools=TOOLS, max_tokens=10, temperature=None)
        await provider.aclose()
    assert any("no tool_result" in problem for problem in fake.violations)
    with pytest.raises(AssertionError):
        fake.assert_clean()


def test_openai_translation_keeps_tool_calls_and_results() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [text("let me"), tool_use("run_sql", {"sql": "x"}, id="t1")]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}],
        },
    ]
    out = to_openai_messages("sys", history)
    assert out[0] == {"role": "system", "content": "sys"}
    assert out[2]["tool_calls"][0]["function"] == {"name": "run_sql", "arguments": '{"sql": "x"}'}
    assert out[3] == {"role": "tool", "tool_call_id": "t1", "content": "[tool error] boom"}


def test_parse_prepare_reads_the_local_servers_answer() -> None:
    answer = "\n".join(
        [
            "The migration was applied on a temporary branch only. The default branch is unchanged.",
            "- migrationId: 5f0c7a52-3c1e-4a43-9d7e-2b1f0e6c9a10",
            "- projectId: shiny-cell-31842735",
            "- parentBranchId: br-misty-lake-a1b2c3d4",
            "- temporaryBranchId: br-quiet-sea-z9y8x7w6",
            "- temporaryBranchName: mcp-migration-20260101T000000Z-abc123",
        ]
    )
    parsed = migration_details(answer)
    assert parsed == {
        "migrationId": "5f0c7a52-3c1e-4a43-9d7e-2b1f0e6c9a10",
        "temporaryBranchId": "br-quiet-sea-z9y8x7w6",
        "parentBranchId": "br-misty-lake-a1b2c3d4",
    }
    as_json = '{"migrationId": "m1", "temporaryBranchId": "br-t", "parentBranchId": "br-p"}'
    assert migration_details(as_json) == {"migrationId": "m1", "temporaryBranchId": "br-t", "parentBranchId": "br-p"}


def chat_completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


async def test_openai_compatible_provider_over_the_wire() -> None:
    def completions(request: Request) -> Response:
        messages = request.body["messages"]
        if messages[-1]["role"] == "tool":
            assert messages[-2]["tool_calls"][0]["id"] == "call_1"
            return Response(200, chat_completion({"content": "There are 2 tables."}, "stop"))
        call = {"id": "call_1", "type": "function", "function": {"name": "run_sql", "arguments": '{"sql": "x"}'}}
        return Response(200, chat_completion({"content": None, "tool_calls": [call]}, "tool_calls"))

    server = JsonServer({"POST /v1/chat/completions": completions}).start()
    try:
        provider = OpenAICompatProvider("gpt-4o-mini", "test-key", base_url=server.url + "/v1", max_retries=0)
        history: list[dict[str, Any]] = [{"role": "user", "content": "how many tables?"}]
        first = await provider.complete(system="s", messages=history, tools=TOOLS, max_tokens=50, temperature=None)
        assert first.stop_reason == "tool_use" and first.tool_uses[0]["input"] == {"sql": "x"}
        history += [
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "2"}]},
        ]
        second = await provider.complete(system="s", messages=history, tools=TOOLS, max_tokens=50, temperature=None)
        await provider.aclose()
    finally:
        server.stop()
    assert second.stop_reason == "end_turn" and second.text == "There are 2 tables."
    assert second.usage.input_tokens == 11 and second.usage.output_tokens == 7
    assert server.requests[0].body["tools"][0]["function"]["name"] == "run_sql"
